"""enrich's price datasets as DataFrames: one price per token and UTC day, tokens named by
chain and address or by CoinGecko id, bad rows refusing the dataset (exit 2)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from chainloom_spark.errors import JobInputError
from chainloom_spark.jobs.enrich.arguments import JOB, EnrichPlan

_log = logging.getLogger("chainloom_spark")

if TYPE_CHECKING:
    from pyspark.sql import Column, DataFrame, SparkSession


# ----------------------------------------------------------------------------- prices


def _token_address(column: Column) -> Column:
    """A token address as 64 lower-case hex characters (``0x`` and case dropped, left-padded:
    a 20-byte EVM address is accepted as is); null when it is not hex."""
    from pyspark.sql import functions as F  # noqa: N812 - Spark's own convention

    text = F.regexp_replace(F.lower(F.trim(column.cast("string"))), "^0x", "")
    return F.when(text.rlike("^[0-9a-f]{1,64}$"), F.lpad(text, 64, "0"))


def _token_chain(column: Column) -> Column:
    from pyspark.sql import functions as F  # noqa: N812

    chain = F.trim(column.cast("string"))
    number = chain.try_cast("int")
    return F.when(chain.rlike("^[0-9]{1,5}$") & (number <= 65535), number)


def read_dataset(spark: SparkSession, flag: str, path: str, fmt: str) -> DataFrame:
    """A CSV (header line, every column read as text) or Parquet dataset."""
    from pyspark.errors import AnalysisException

    try:
        if fmt == "parquet":
            return spark.read.parquet(path)
        return spark.read.option("header", True).csv(path)
    except AnalysisException as error:
        raise JobInputError(f"{flag} {path}: {str(error).splitlines()[0]}") from None


def _fail_on_rows(frame: DataFrame, flag: str, path: str, what: str) -> None:
    count = frame.count()
    if count:
        first = frame.first()
        example = {k: v for k, v in (first.asDict() if first else {}).items() if v is not None}
        raise JobInputError(f"{flag} {path}: {count} rows {what} (first: {example})")


def load_prices(spark: SparkSession, plan: EnrichPlan) -> DataFrame:
    """(token_chain, token_address, day, price) with at most one price per token and day.

    Checks every row (a date, a non-negative price, a token) and refuses the dataset (exit 2)
    naming the first bad row; two different prices for one token and day are refused too.
    """
    from pyspark.sql import functions as F  # noqa: N812

    flag, path = "--prices", plan.prices
    raw = read_dataset(spark, flag, path, plan.prices_format)
    columns = set(raw.columns)
    missing = {"date", "price_usd"} - columns
    if missing:
        raise JobInputError(f"{flag} {path}: missing columns {', '.join(sorted(missing))}")
    by_token = {"token_chain", "token_address"} <= columns
    if not by_token and "coingecko_id" not in columns:
        raise JobInputError(
            f"{flag} {path}: needs a coingecko_id column or token_chain and token_address"
        )
    text = F.trim(F.col("price_usd").cast("string"))
    prices = raw.select(
        F.col("date").cast("string").alias("date_text"),
        F.try_to_date(F.col("date").cast("string"), "yyyy-MM-dd").alias("day"),
        text.alias("price"),
        (_token_chain(F.col("token_chain")) if by_token else F.lit(None).cast("int")).alias(
            "token_chain"
        ),
        (_token_address(F.col("token_address")) if by_token else F.lit(None)).alias(
            "token_address"
        ),
        (
            F.nullif(F.trim(F.col("coingecko_id").cast("string")), F.lit(""))
            if "coingecko_id" in columns
            else F.lit(None).cast("string")
        ).alias("coingecko_id"),
        # Whether the row names a token at all (then both parts must be valid).
        (
            F.coalesce(F.trim(F.col("token_chain").cast("string")), F.lit("")) != ""
            if by_token
            else F.lit(False)
        ).alias("names_token"),
    )
    exact = F.col("token_chain").isNotNull() & F.col("token_address").isNotNull()
    valid = (
        F.col("day").isNotNull()
        & (exact | ~F.col("names_token"))
        & F.col("price").try_cast("double").isNotNull()
        & (F.col("price").try_cast("double") >= 0)
        & (exact | F.col("coingecko_id").isNotNull())
    )
    _fail_on_rows(
        prices.where(~valid | valid.isNull()),
        flag,
        path,
        "lack a YYYY-MM-DD date, a non-negative price or a valid token",
    )
    prices = prices.withColumn("day", F.date_format("day", "yyyy-MM-dd"))
    token_prices = prices.where(exact).select("token_chain", "token_address", "day", "price")
    coin_prices = prices.where(~exact).select("coingecko_id", "day", "price")
    if plan.coin_ids is not None:
        mapping = load_coin_ids(spark, plan.coin_ids, plan.coin_ids_format)
        mapped = coin_prices.join(mapping, "coingecko_id").select(
            "token_chain", "token_address", "day", "price"
        )
        # An exact token row wins over a CoinGecko id on the same day.
        mapped = mapped.join(token_prices, ["token_chain", "token_address", "day"], "left_anti")
        token_prices = token_prices.unionByName(mapped)
    elif not coin_prices.isEmpty():
        _log.warning("%s: price rows naming a coingecko_id are ignored without --coin-ids", JOB)
    token_prices = token_prices.withColumn("value", F.col("price").try_cast("decimal(38,18)"))
    ambiguous = (
        token_prices.groupBy("token_chain", "token_address", "day")
        .agg(F.countDistinct("value").alias("prices"))
        .where(F.col("prices") > 1)
    )
    _fail_on_rows(ambiguous, flag, path, "are (token, day) pairs with different prices")
    return token_prices.dropDuplicates(["token_chain", "token_address", "day"]).drop("value")


def load_coin_ids(spark: SparkSession, path: str, fmt: str) -> DataFrame:
    """(coingecko_id, token_chain, token_address), every row checked; a token may have only
    one id."""
    from pyspark.sql import functions as F  # noqa: N812

    flag = "--coin-ids"
    raw = read_dataset(spark, flag, path, fmt)
    missing = {"coingecko_id", "token_chain", "token_address"} - set(raw.columns)
    if missing:
        raise JobInputError(f"{flag} {path}: missing columns {', '.join(sorted(missing))}")
    mapping = raw.select(
        F.nullif(F.trim(F.col("coingecko_id").cast("string")), F.lit("")).alias("coingecko_id"),
        _token_chain(F.col("token_chain")).alias("token_chain"),
        _token_address(F.col("token_address")).alias("token_address"),
    )
    valid = (
        F.col("coingecko_id").isNotNull()
        & F.col("token_chain").isNotNull()
        & F.col("token_address").isNotNull()
    )
    _fail_on_rows(mapping.where(~valid), flag, path, "lack an id, a chain or a hex address")
    mapping = mapping.dropDuplicates()
    twice = mapping.groupBy("token_chain", "token_address").count().where(F.col("count") > 1)
    _fail_on_rows(twice, flag, path, "are tokens mapped to more than one coingecko_id")
    return mapping
