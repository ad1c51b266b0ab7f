# The chainloom image: the library, services, operator and Spark jobs in one Python install.
# The operator and the Spark jobs need the [operator] and [spark] extras (docs/dependencies.md).
#   docker build -t chainloom:latest .                         the plain image (the default target)
#   docker build --target spark -t chainloom-spark:latest .    + Java 17, for SparkApplications
# The base is Debian bookworm's, whose archive has the Java runtime Spark 4 runs on (17).
ARG PYTHON_IMAGE=python:3.11-slim-bookworm
FROM ${PYTHON_IMAGE} AS chainloom
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

# The Spark variant (kubernetes.image of a SparkApplication, chainloom-spark:latest by default):
# driver and executors run /opt/chainloom/spark-apps/chainloom_spark/submit.py with pyspark from
# the install above and Debian's Java runtime.
FROM chainloom AS spark
USER root
# (slim images drop /usr/share/man, where the Java packages register their manual pages)
RUN mkdir -p /usr/share/man/man1 \
    && apt-get update \
    && apt-get install -y --no-install-recommends openjdk-17-jre-headless \
    && rm -rf /var/lib/apt/lists/*
ENV JAVA_HOME=/usr/lib/jvm/java-17-openjdk-amd64
USER 10001:10001
# Spark's Kubernetes backend starts driver and executor containers as `driver ...` / `executor`;
# every other command line goes to chainloom (spark-apps/chainloom_spark/pod_entrypoint.py).
ENTRYPOINT ["python", "-m", "chainloom_spark.pod_entrypoint"]

# The default target: the plain image.
FROM chainloom
