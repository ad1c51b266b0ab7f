"""Type codes, field keys and enumerations of the XRPL canonical binary format.

Every number comes from rippled's ``definitions.json`` (the copy kept beside
:mod:`.definitions`): the constants below are looked up *by name* once, at import, so the codec
names every field, transaction type, ledger entry type and result the file knows -- no hand-kept
subset. The constants are the ones the ETL, the NFT derivation and the workload generator touch;
the parser walks every other field generically by its type code.

A field is identified by its *key* ``type_code << 16 | field_code``; sorting keys sorts fields in
canonical order.
"""

from __future__ import annotations

from typing import Final

from chainloom.ledger.xrpl.definitions import definitions

_DEFS = definitions()

# --- type codes --------------------------------------------------------------------------------
UINT16: Final = _DEFS.types["UInt16"]
UINT32: Final = _DEFS.types["UInt32"]
UINT64: Final = _DEFS.types["UInt64"]
HASH128: Final = _DEFS.types["Hash128"]
HASH256: Final = _DEFS.types["Hash256"]
AMOUNT: Final = _DEFS.types["Amount"]
BLOB: Final = _DEFS.types["Blob"]
ACCOUNT_ID: Final = _DEFS.types["AccountID"]
NUMBER: Final = _DEFS.types["Number"]
INT32: Final = _DEFS.types["Int32"]
INT64: Final = _DEFS.types["Int64"]
STOBJECT: Final = _DEFS.types["STObject"]
STARRAY: Final = _DEFS.types["STArray"]
UINT8: Final = _DEFS.types["UInt8"]
HASH160: Final = _DEFS.types["Hash160"]
PATHSET: Final = _DEFS.types["PathSet"]
VECTOR256: Final = _DEFS.types["Vector256"]
UINT96: Final = _DEFS.types["UInt96"]
HASH192: Final = _DEFS.types["Hash192"]
UINT384: Final = _DEFS.types["Hash384"]  # UInt384 in older definitions
UINT512: Final = _DEFS.types["Hash512"]  # UInt512 in older definitions
ISSUE: Final = _DEFS.types["Issue"]
XCHAIN_BRIDGE: Final = _DEFS.types["XChainBridge"]
CURRENCY: Final = _DEFS.types["Currency"]

#: Byte width of every fixed-size type.
FIXED_WIDTH: Final[dict[int, int]] = {
    UINT8: 1,
    UINT16: 2,
    UINT32: 4,
    UINT64: 8,
    INT32: 4,
    INT64: 8,
    UINT96: 12,
    HASH128: 16,
    HASH160: 20,
    HASH192: 24,
    HASH256: 32,
    UINT384: 48,
    UINT512: 64,
    NUMBER: 12,
    CURRENCY: 20,
}

#: Types whose value carries a variable-length prefix.
VL_TYPES: Final = frozenset({BLOB, ACCOUNT_ID, VECTOR256})


def key(type_code: int, field_code: int) -> int:
    """The sortable key of a field."""
    return type_code << 16 | field_code


def field_key(name: str) -> int:
    """The sortable key of the field called ``name`` in the definitions."""
    return _DEFS.field(name).key


# --- fields ------------------------------------------------------------------------------------
LEDGER_ENTRY_TYPE: Final = field_key("LedgerEntryType")
TRANSACTION_TYPE: Final = field_key("TransactionType")
TRANSFER_FEE: Final = field_key("TransferFee")

FLAGS: Final = field_key("Flags")
SEQUENCE: Final = field_key("Sequence")
PREVIOUS_TXN_LGR_SEQ: Final = field_key("PreviousTxnLgrSeq")
OWNER_COUNT: Final = field_key("OwnerCount")
OFFER_SEQUENCE: Final = field_key("OfferSequence")
LAST_LEDGER_SEQUENCE: Final = field_key("LastLedgerSequence")
TRANSACTION_INDEX: Final = field_key("TransactionIndex")
NFTOKEN_TAXON: Final = field_key("NFTokenTaxon")
MINTED_NFTOKENS: Final = field_key("MintedNFTokens")
BURNED_NFTOKENS: Final = field_key("BurnedNFTokens")

INDEX_NEXT: Final = field_key("IndexNext")
INDEX_PREVIOUS: Final = field_key("IndexPrevious")
BOOK_NODE: Final = field_key("BookNode")
OWNER_NODE: Final = field_key("OwnerNode")
EXCHANGE_RATE: Final = field_key("ExchangeRate")
LOW_NODE: Final = field_key("LowNode")
HIGH_NODE: Final = field_key("HighNode")
NFTOKEN_OFFER_NODE: Final = field_key("NFTokenOfferNode")

PREVIOUS_TXN_ID: Final = field_key("PreviousTxnID")
LEDGER_INDEX: Final = field_key("LedgerIndex")
ROOT_INDEX: Final = field_key("RootIndex")
NFTOKEN_ID: Final = field_key("NFTokenID")
BOOK_DIRECTORY: Final = field_key("BookDirectory")
NFTOKEN_BUY_OFFER: Final = field_key("NFTokenBuyOffer")
NFTOKEN_SELL_OFFER: Final = field_key("NFTokenSellOffer")

AMOUNT_FIELD: Final = field_key("Amount")
BALANCE: Final = field_key("Balance")
LIMIT_AMOUNT: Final = field_key("LimitAmount")
TAKER_PAYS: Final = field_key("TakerPays")
TAKER_GETS: Final = field_key("TakerGets")
LOW_LIMIT: Final = field_key("LowLimit")
HIGH_LIMIT: Final = field_key("HighLimit")
FEE: Final = field_key("Fee")
DELIVERED_AMOUNT: Final = field_key("DeliveredAmount")

SIGNING_PUB_KEY: Final = field_key("SigningPubKey")
TXN_SIGNATURE: Final = field_key("TxnSignature")
URI: Final = field_key("URI")

ACCOUNT: Final = field_key("Account")
OWNER: Final = field_key("Owner")
DESTINATION: Final = field_key("Destination")

OBJECT_END: Final = field_key("ObjectEndMarker")
CREATED_NODE: Final = field_key("CreatedNode")
DELETED_NODE: Final = field_key("DeletedNode")
MODIFIED_NODE: Final = field_key("ModifiedNode")
PREVIOUS_FIELDS: Final = field_key("PreviousFields")
FINAL_FIELDS: Final = field_key("FinalFields")
NEW_FIELDS: Final = field_key("NewFields")
NFTOKEN: Final = field_key("NFToken")

ARRAY_END: Final = field_key("ArrayEndMarker")
AFFECTED_NODES: Final = field_key("AffectedNodes")
NFTOKENS: Final = field_key("NFTokens")

TRANSACTION_RESULT: Final = field_key("TransactionResult")

TAKER_PAYS_CURRENCY: Final = field_key("TakerPaysCurrency")
TAKER_PAYS_ISSUER: Final = field_key("TakerPaysIssuer")
TAKER_GETS_CURRENCY: Final = field_key("TakerGetsCurrency")
TAKER_GETS_ISSUER: Final = field_key("TakerGetsIssuer")

INDEXES: Final = field_key("Indexes")
HASHES: Final = field_key("Hashes")

#: Names of every serialized field, by key (from the definitions).
FIELD_NAMES: Final[dict[int, str]] = {
    field_key: field.name for field_key, field in _DEFS.fields_by_key.items()
}


# --- enumerations ------------------------------------------------------------------------------
#: Every LedgerEntryType, TransactionType and TransactionResult the definitions name, by code.
LEDGER_ENTRY_NAMES: Final = _DEFS.ledger_entry_types
TRANSACTION_TYPE_NAMES: Final = _DEFS.transaction_types
RESULT_NAMES: Final = _DEFS.transaction_results
LEDGER_ENTRY_CODES: Final = {name: code for code, name in LEDGER_ENTRY_NAMES.items()}


def _entry(name: str) -> int:
    return _DEFS.code_of(LEDGER_ENTRY_NAMES, name)


def transaction_code(name: str) -> int:
    """The TransactionType code of ``name`` (``Payment`` -> 0)."""
    return _DEFS.code_of(TRANSACTION_TYPE_NAMES, name)


_transaction = transaction_code


#: LedgerEntryType codes used by the ETL, the API and the generator.
ACCOUNT_ROOT: Final = _entry("AccountRoot")
DIRECTORY_NODE: Final = _entry("DirectoryNode")
LEDGER_HASHES: Final = _entry("LedgerHashes")
OFFER: Final = _entry("Offer")
RIPPLE_STATE: Final = _entry("RippleState")
NFTOKEN_PAGE: Final = _entry("NFTokenPage")
NFTOKEN_OFFER: Final = _entry("NFTokenOffer")

#: TransactionType codes.
PAYMENT: Final = _transaction("Payment")
OFFER_CREATE: Final = _transaction("OfferCreate")
OFFER_CANCEL: Final = _transaction("OfferCancel")
TRUST_SET: Final = _transaction("TrustSet")
ACCOUNT_DELETE: Final = _transaction("AccountDelete")
NFTOKEN_MINT: Final = _transaction("NFTokenMint")
NFTOKEN_BURN: Final = _transaction("NFTokenBurn")
NFTOKEN_CREATE_OFFER: Final = _transaction("NFTokenCreateOffer")
NFTOKEN_CANCEL_OFFER: Final = _transaction("NFTokenCancelOffer")
NFTOKEN_ACCEPT_OFFER: Final = _transaction("NFTokenAcceptOffer")
NFTOKEN_MODIFY: Final = _transaction("NFTokenModify")

#: TransactionResult tesSUCCESS.
TES_SUCCESS: Final = _DEFS.code_of(RESULT_NAMES, "tesSUCCESS")


def transaction_type_name(code: int) -> str:
    """The name of a TransactionType code (``Unknown(<n>)`` for a code newer than the
    definitions)."""
    return TRANSACTION_TYPE_NAMES.get(code, f"Unknown({code})")


def ledger_entry_name(code: int) -> str:
    """The name of a LedgerEntryType code (``Unknown(<n>)`` for a code newer than the
    definitions)."""
    return LEDGER_ENTRY_NAMES.get(code, f"Unknown({code})")


def result_name(code: int) -> str:
    """The name of a TransactionResult code (``Unknown(<n>)`` for a code newer than the
    definitions)."""
    return RESULT_NAMES.get(code, f"Unknown({code})")
