# The chainloom image: the library, services, operator and Spark jobs in one Python install.
FROM python:3.11-slim
WORKDIR /opt/chainloom
COPY pyproject.toml README.md ./
COPY services services
COPY operator operator
COPY spark-apps spark-apps
RUN pip install --no-cache-dir . grpcio-tools mypy-protobuf && python -m chainloom.rpc.build
USER 65534
ENTRYPOINT ["chainloom"]
