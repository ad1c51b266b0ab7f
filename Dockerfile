# The chainloom image: the library, services, operator and Spark jobs in one Python install.
# The operator and the Spark jobs need the [operator] and [spark] extras (docs/dependencies.md).
FROM python:3.11-slim
WORKDIR /opt/chainloom
COPY pyproject.toml README.md ./
COPY services services
COPY operator operator
COPY spark-apps spark-apps
RUN pip install --no-cache-dir ".[operator,spark]" grpcio-tools mypy-protobuf && python -m chainloom.rpc.build
# The chainloom user (10001): what the chart's and the operator's pods run as (runAsUser); kopf
# needs a passwd entry for its uid.
RUN useradd --uid 10001 --user-group --home-dir /tmp --no-create-home --shell /usr/sbin/nologin chainloom
USER 10001:10001
ENTRYPOINT ["chainloom"]
