"""NFT table rows derived from transactions and from NFTokenPage objects (Clio's NFTHelpers).

Pure: input is parsed transactions and metadata (:mod:`chainloom.ledger.xrpl.parse`), output the
``NFTsData`` / ``NFTTransactionsData`` values the backend writes. The rules, per transaction
type, only for ``tesSUCCESS``:

* NFTokenMint: the minted ID is the one NFTokenPage ID present after and not before; the owner
  is the first NFTokenPage node's key prefix; URI from the transaction.
* NFTokenBurn: owner at the burn = the page whose previous (or, for a deleted page, final)
  NFTokens held the ID.
* NFTokenAcceptOffer: with a buy offer, its final NFTokenID and Owner; with only a sell offer,
  the first created/modified page, not the seller's, holding the ID.
* NFTokenCreateOffer: a history row for ``NFTokenID``; NFTokenCancelOffer: one per distinct
  NFTokenID among the deleted offers; NFTokenModify: history + a URI-only change.

Within a ledger only the state of the highest transaction index per token is kept, because the
``nf_tokens`` key is ``(token_id, sequence)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass

from chainloom.ledger.errors import LedgerIntegrityError
from chainloom.ledger.types import NFTsData, NFTTransactionsData
from chainloom.ledger.xrpl import binary
from chainloom.ledger.xrpl import fields as sf
from chainloom.ledger.xrpl.parse import AffectedNode, NodeKind, ParsedMetadata, ParsedTransaction


@dataclass(frozen=True, slots=True)
class TransactionNFTs:
    """The NFT rows one transaction produces."""

    transactions: tuple[NFTTransactionsData, ...]
    """``nf_token_transactions`` rows."""
    state: NFTsData | None
    """The ``nf_tokens`` (and possibly URI / issuer) change, if the transaction makes one."""
    transaction_index: int
    """The transaction's index, to keep the last state per token in a ledger."""


def _token_ids(value: binary.Value | None) -> list[bytes]:
    """The NFTokenIDs of an ``NFTokens`` array value."""
    if not isinstance(value, list):
        return []
    ids = []
    for _, token in value:
        token_id = token.get(sf.NFTOKEN_ID)
        if isinstance(token_id, bytes):
            ids.append(token_id)
    return ids


def _field(obj: binary.STObject | None, field_key: int) -> bytes | None:
    if obj is None:
        return None
    value = obj.get(field_key)
    return value if isinstance(value, bytes) else None


def _fail(tx: ParsedTransaction, sequence: int, what: str) -> LedgerIntegrityError:
    return LedgerIntegrityError(
        f"ledger {sequence}: unexpected {tx.type_name} data in transaction "
        f"{tx.hash.hex().upper()}: {what}",
        sequence=sequence,
    )


def nfts_from_transaction(
    tx: ParsedTransaction, meta: ParsedMetadata, sequence: int
) -> TransactionNFTs | None:
    """The NFT rows of one transaction, or None when it touches no NFT table."""
    if meta.transaction_result != sf.TES_SUCCESS:
        return None
    rule = _RULES.get(tx.transaction_type)
    if rule is None:
        return None
    token_ids, state = rule(tx, meta, sequence)
    index = meta.transaction_index
    history = tuple(NFTTransactionsData(t, sequence, index, tx.hash) for t in token_ids)
    return TransactionNFTs(history, state, index)


_Rows = tuple[Sequence[bytes], NFTsData | None]


def _tx_token_id(tx: ParsedTransaction, sequence: int) -> bytes:
    token_id = _field(tx.fields, sf.NFTOKEN_ID)
    if token_id is None:
        raise _fail(tx, sequence, "no NFTokenID")
    return token_id


def _mint_rows(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> _Rows:
    token_id, owner = _minted(tx, meta, sequence)
    uri = _field(tx.fields, sf.URI) or b""
    return (token_id,), NFTsData(token_id, sequence, owner, is_burned=False, uri=uri)


def _burn_rows(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> _Rows:
    token_id = _tx_token_id(tx, sequence)
    owner = _owner_at_burn(meta.nodes, token_id)
    if owner is None:
        raise _fail(tx, sequence, "no NFTokenPage held the burned token")
    return (token_id,), NFTsData(token_id, sequence, owner, is_burned=True, uri=None)


def _accept_rows(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> _Rows:
    token_id, owner = _accepted(tx, meta, sequence)
    return (token_id,), NFTsData(token_id, sequence, owner, is_burned=False, uri=None)


def _create_offer_rows(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> _Rows:
    return (_tx_token_id(tx, sequence),), None


def _cancel_offer_rows(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> _Rows:
    ids = {
        token_id
        for node in meta.nodes
        if node.ledger_entry_type == sf.NFTOKEN_OFFER
        and (token_id := _field(node.final_fields, sf.NFTOKEN_ID)) is not None
    }
    return sorted(ids), None


def _modify_rows(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> _Rows:
    token_id = _tx_token_id(tx, sequence)
    owner = _field(tx.fields, sf.OWNER) or tx.account
    uri = _field(tx.fields, sf.URI) or b""
    return (token_id,), NFTsData(token_id, sequence, owner, False, uri, only_uri_changed=True)


_RULES: dict[int, Callable[[ParsedTransaction, ParsedMetadata, int], _Rows]] = {
    sf.NFTOKEN_MINT: _mint_rows,
    sf.NFTOKEN_BURN: _burn_rows,
    sf.NFTOKEN_ACCEPT_OFFER: _accept_rows,
    sf.NFTOKEN_CREATE_OFFER: _create_offer_rows,
    sf.NFTOKEN_CANCEL_OFFER: _cancel_offer_rows,
    sf.NFTOKEN_MODIFY: _modify_rows,
}


def _minted(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> tuple[bytes, bytes]:
    before: list[bytes] = []
    after: list[bytes] = []
    owner: bytes | None = None
    for node in meta.nodes:
        if node.ledger_entry_type != sf.NFTOKEN_PAGE:
            continue
        if owner is None:
            owner = node.ledger_index[:20]
        if node.kind is NodeKind.CREATED:
            after += _token_ids((node.new_fields or {}).get(sf.NFTOKENS))
        elif node.kind is NodeKind.MODIFIED:
            previous = (node.previous_fields or {}).get(sf.NFTOKENS)
            if previous is None:
                continue  # a page whose links changed, not its tokens
            before += _token_ids(previous)
            after += _token_ids((node.final_fields or {}).get(sf.NFTOKENS))
    minted = sorted(set(after) - set(before))
    if len(minted) != 1 or owner is None or len(after) != len(before) + 1:
        raise _fail(tx, sequence, f"{len(after) - len(before)} tokens appeared, expected 1")
    return minted[0], owner


def _owner_at_burn(nodes: Iterable[AffectedNode], token_id: bytes) -> bytes | None:
    for node in nodes:
        if node.ledger_entry_type != sf.NFTOKEN_PAGE or node.kind is NodeKind.CREATED:
            continue
        previous = (node.previous_fields or {}).get(sf.NFTOKENS)
        if previous is None and node.kind is NodeKind.DELETED:
            previous = (node.final_fields or {}).get(sf.NFTOKENS)
        if token_id in _token_ids(previous):
            return node.ledger_index[:20]
    return None


def _accepted(tx: ParsedTransaction, meta: ParsedMetadata, sequence: int) -> tuple[bytes, bytes]:
    buy_offer = _field(tx.fields, sf.NFTOKEN_BUY_OFFER)
    sell_offer = _field(tx.fields, sf.NFTOKEN_SELL_OFFER)
    by_key = {node.ledger_index: node for node in meta.nodes}
    if buy_offer is not None:
        node = by_key.get(buy_offer)
        token_id = _field(node.final_fields, sf.NFTOKEN_ID) if node else None
        owner = _field(node.final_fields, sf.OWNER) if node else None
        if token_id is None or owner is None:
            raise _fail(tx, sequence, "the buy offer is not among the affected nodes")
        return token_id, owner
    node = by_key.get(sell_offer) if sell_offer is not None else None
    token_id = _field(node.final_fields, sf.NFTOKEN_ID) if node else None
    seller = _field(node.final_fields, sf.OWNER) if node else None
    if token_id is None or seller is None:
        raise _fail(tx, sequence, "the sell offer is not among the affected nodes")
    for page in meta.nodes:
        if page.ledger_entry_type != sf.NFTOKEN_PAGE or page.kind is NodeKind.DELETED:
            continue
        page_owner = page.ledger_index[:20]
        if page_owner == seller:
            continue
        if token_id in _token_ids(page.fields_after.get(sf.NFTOKENS)):
            return token_id, page_owner
    raise _fail(tx, sequence, "no page of the buyer holds the token")


def nfts_from_object(key: bytes, blob: bytes, sequence: int) -> list[NFTsData]:
    """The NFTs of one NFTokenPage object at the initial load (other objects: none)."""
    if len(blob) < 3 or blob[:3] != b"\x11\x00\x50":
        return []
    page = binary.decode(blob)
    owner = key[:20]
    result = []
    tokens = page.get(sf.NFTOKENS)
    for _, token in tokens if isinstance(tokens, list) else ():
        token_id = token.get(sf.NFTOKEN_ID)
        if isinstance(token_id, bytes):
            uri = token.get(sf.URI, b"")
            assert isinstance(uri, bytes)
            result.append(NFTsData(token_id, sequence, owner, is_burned=False, uri=uri))
    return result


def ledger_nft_rows(
    per_transaction: Iterable[TransactionNFTs],
) -> tuple[list[NFTsData], list[NFTTransactionsData]]:
    """Combine a ledger's rows: every history row, and the last state change per token."""
    history: list[NFTTransactionsData] = []
    latest: dict[bytes, tuple[int, NFTsData]] = {}
    for item in per_transaction:
        history.extend(item.transactions)
        state = item.state
        if state is None:
            continue
        current = latest.get(state.token_id)
        if current is None or item.transaction_index > current[0]:
            latest[state.token_id] = (item.transaction_index, state)
    return [state for _, state in latest.values()], history
