"""enrich: backfill TokenTransferDetails (amount in whole tokens, USD notional) from daily prices.

The live writer enriches a transfer when it stores it, if its token's attestation is already
stored and a price source answers. Transfers stored before their attestation, or without a
price source, stay without ``TokenTransferDetails`` (or without ``NotionalUSD``). This job
fills them in over the whole table from a historical daily price dataset:

* **Scan.** The events table is read in key ranges (:mod:`chainloom_spark.table_scan`); each
  token transfer becomes a record (token, UTC day of its VAA timestamp, whether it already has
  details and a notional), each attestation (``AssetMetaPayload``) a record of the token's
  symbol, name and decimals. The newest attestation of a token wins, as in the live writer.
* **Join.** In Spark: transfers lacking ``NotionalUSD`` with the attestations by token, then
  with the prices by (token, day). A price row names its token by ``token_chain`` +
  ``token_address`` or by ``coingecko_id`` (mapped to tokens with ``--coin-ids``); an exact
  token row wins over a CoinGecko id for the same day.
* **Write.** Each partition re-reads its rows and computes the cells with the event store's
  own :func:`chainloom.eventstore.cells.transfer_details_cells` (the 8-decimal normalisation and
  the rounding of :mod:`chainloom.eventstore.enrichment`), then writes only the
  ``TokenTransferDetails`` cells that differ from the stored ones. Cells carry the VAA's
  timestamp, so a rerun computes the same cells and writes nothing.

A transfer whose token has an attestation but no price for its day gets the details without
``NotionalUSD`` (as the live writer does) and is reported ``unpriced`` on every run; one
without an attestation is reported ``no_asset_meta`` and left alone.

The sections are modules: :mod:`.arguments` (flags and the plan), :mod:`.prices` (the price
datasets), :mod:`.tasks` (what the Python workers run) and :mod:`.driver`.
"""

from chainloom_spark.jobs.enrich.arguments import (
    FORMATS,
    JOB,
    EnrichPlan,
    dataset_format,
    parser,
    resolve,
)
from chainloom_spark.jobs.enrich.driver import COUNTERS, candidates, main, run
from chainloom_spark.jobs.enrich.tasks import details_to_write, scan_record

__all__ = [
    "COUNTERS",
    "FORMATS",
    "JOB",
    "EnrichPlan",
    "candidates",
    "dataset_format",
    "details_to_write",
    "main",
    "parser",
    "resolve",
    "run",
    "scan_record",
]
