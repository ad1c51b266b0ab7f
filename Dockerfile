# The chainloom image: the library, services, operator and Spark jobs in one Python install.
# The operator and the Spark jobs need the [operator] and [spark] extras (docs/dependencies.md).
FROM python:3.11-slim
WORKDIR /opt/chainloom
COPY pyproject.toml README.md ./
COPY services services
COPY operator operator
COPY spark-apps spark-apps
RUN pip install --no-cache-dir ".[operator,spark]" grpcio-tools mypy-protobuf && python -m chainloom.rpc.build
USER 65534
ENTRYPOINT ["chainloom"]
