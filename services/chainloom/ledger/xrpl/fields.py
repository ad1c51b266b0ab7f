"""Type codes, field codes and enumerations of the XRPL canonical binary format.

Only the fields the ETL, the NFT derivation and the workload generator touch are named here; the
parser walks every other field generically by its type code, so an unknown field never stops it.
The numbers are the protocol's (rippled ``SField.cpp`` / ``definitions.json``); a unit test checks
each one against xrpl-py's ``definitions.json``.

A field is identified by its *key* ``type_code << 16 | field_code``; sorting keys sorts fields in
canonical order.
"""

from __future__ import annotations

from typing import Final

# --- type codes --------------------------------------------------------------------------------
UINT16: Final = 1
UINT32: Final = 2
UINT64: Final = 3
HASH128: Final = 4
HASH256: Final = 5
AMOUNT: Final = 6
BLOB: Final = 7
ACCOUNT_ID: Final = 8
NUMBER: Final = 9
INT32: Final = 10
INT64: Final = 11
STOBJECT: Final = 14
STARRAY: Final = 15
UINT8: Final = 16
HASH160: Final = 17
PATHSET: Final = 18
VECTOR256: Final = 19
UINT96: Final = 20
HASH192: Final = 21
UINT384: Final = 22
UINT512: Final = 23
ISSUE: Final = 24
XCHAIN_BRIDGE: Final = 25
CURRENCY: Final = 26

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


# --- fields ------------------------------------------------------------------------------------
LEDGER_ENTRY_TYPE: Final = key(UINT16, 1)
TRANSACTION_TYPE: Final = key(UINT16, 2)
TRANSFER_FEE: Final = key(UINT16, 4)

FLAGS: Final = key(UINT32, 2)
SEQUENCE: Final = key(UINT32, 4)
PREVIOUS_TXN_LGR_SEQ: Final = key(UINT32, 5)
OWNER_COUNT: Final = key(UINT32, 13)
OFFER_SEQUENCE: Final = key(UINT32, 25)
LAST_LEDGER_SEQUENCE: Final = key(UINT32, 27)
TRANSACTION_INDEX: Final = key(UINT32, 28)
NFTOKEN_TAXON: Final = key(UINT32, 42)
MINTED_NFTOKENS: Final = key(UINT32, 43)
BURNED_NFTOKENS: Final = key(UINT32, 44)

INDEX_NEXT: Final = key(UINT64, 1)
INDEX_PREVIOUS: Final = key(UINT64, 2)
BOOK_NODE: Final = key(UINT64, 3)
OWNER_NODE: Final = key(UINT64, 4)
EXCHANGE_RATE: Final = key(UINT64, 6)
LOW_NODE: Final = key(UINT64, 7)
HIGH_NODE: Final = key(UINT64, 8)
NFTOKEN_OFFER_NODE: Final = key(UINT64, 12)

PREVIOUS_TXN_ID: Final = key(HASH256, 5)
LEDGER_INDEX: Final = key(HASH256, 6)
ROOT_INDEX: Final = key(HASH256, 8)
NFTOKEN_ID: Final = key(HASH256, 10)
BOOK_DIRECTORY: Final = key(HASH256, 16)
NFTOKEN_BUY_OFFER: Final = key(HASH256, 28)
NFTOKEN_SELL_OFFER: Final = key(HASH256, 29)

AMOUNT_FIELD: Final = key(AMOUNT, 1)
BALANCE: Final = key(AMOUNT, 2)
LIMIT_AMOUNT: Final = key(AMOUNT, 3)
TAKER_PAYS: Final = key(AMOUNT, 4)
TAKER_GETS: Final = key(AMOUNT, 5)
LOW_LIMIT: Final = key(AMOUNT, 6)
HIGH_LIMIT: Final = key(AMOUNT, 7)
FEE: Final = key(AMOUNT, 8)
DELIVERED_AMOUNT: Final = key(AMOUNT, 18)

SIGNING_PUB_KEY: Final = key(BLOB, 3)
TXN_SIGNATURE: Final = key(BLOB, 4)
URI: Final = key(BLOB, 5)

ACCOUNT: Final = key(ACCOUNT_ID, 1)
OWNER: Final = key(ACCOUNT_ID, 2)
DESTINATION: Final = key(ACCOUNT_ID, 3)

OBJECT_END: Final = key(STOBJECT, 1)
CREATED_NODE: Final = key(STOBJECT, 3)
DELETED_NODE: Final = key(STOBJECT, 4)
MODIFIED_NODE: Final = key(STOBJECT, 5)
PREVIOUS_FIELDS: Final = key(STOBJECT, 6)
FINAL_FIELDS: Final = key(STOBJECT, 7)
NEW_FIELDS: Final = key(STOBJECT, 8)
NFTOKEN: Final = key(STOBJECT, 12)

ARRAY_END: Final = key(STARRAY, 1)
AFFECTED_NODES: Final = key(STARRAY, 8)
NFTOKENS: Final = key(STARRAY, 10)

TRANSACTION_RESULT: Final = key(UINT8, 3)

TAKER_PAYS_CURRENCY: Final = key(HASH160, 1)
TAKER_PAYS_ISSUER: Final = key(HASH160, 2)
TAKER_GETS_CURRENCY: Final = key(HASH160, 3)
TAKER_GETS_ISSUER: Final = key(HASH160, 4)

INDEXES: Final = key(VECTOR256, 1)
HASHES: Final = key(VECTOR256, 2)

#: Names of the fields above, for messages and for the oracle test.
FIELD_NAMES: Final[dict[int, str]] = {
    LEDGER_ENTRY_TYPE: "LedgerEntryType",
    TRANSACTION_TYPE: "TransactionType",
    TRANSFER_FEE: "TransferFee",
    FLAGS: "Flags",
    SEQUENCE: "Sequence",
    PREVIOUS_TXN_LGR_SEQ: "PreviousTxnLgrSeq",
    OWNER_COUNT: "OwnerCount",
    OFFER_SEQUENCE: "OfferSequence",
    LAST_LEDGER_SEQUENCE: "LastLedgerSequence",
    TRANSACTION_INDEX: "TransactionIndex",
    NFTOKEN_TAXON: "NFTokenTaxon",
    MINTED_NFTOKENS: "MintedNFTokens",
    BURNED_NFTOKENS: "BurnedNFTokens",
    INDEX_NEXT: "IndexNext",
    INDEX_PREVIOUS: "IndexPrevious",
    BOOK_NODE: "BookNode",
    OWNER_NODE: "OwnerNode",
    EXCHANGE_RATE: "ExchangeRate",
    LOW_NODE: "LowNode",
    HIGH_NODE: "HighNode",
    NFTOKEN_OFFER_NODE: "NFTokenOfferNode",
    PREVIOUS_TXN_ID: "PreviousTxnID",
    LEDGER_INDEX: "LedgerIndex",
    ROOT_INDEX: "RootIndex",
    NFTOKEN_ID: "NFTokenID",
    BOOK_DIRECTORY: "BookDirectory",
    NFTOKEN_BUY_OFFER: "NFTokenBuyOffer",
    NFTOKEN_SELL_OFFER: "NFTokenSellOffer",
    AMOUNT_FIELD: "Amount",
    BALANCE: "Balance",
    LIMIT_AMOUNT: "LimitAmount",
    TAKER_PAYS: "TakerPays",
    TAKER_GETS: "TakerGets",
    LOW_LIMIT: "LowLimit",
    HIGH_LIMIT: "HighLimit",
    FEE: "Fee",
    DELIVERED_AMOUNT: "DeliveredAmount",
    SIGNING_PUB_KEY: "SigningPubKey",
    TXN_SIGNATURE: "TxnSignature",
    URI: "URI",
    ACCOUNT: "Account",
    OWNER: "Owner",
    DESTINATION: "Destination",
    OBJECT_END: "ObjectEndMarker",
    CREATED_NODE: "CreatedNode",
    DELETED_NODE: "DeletedNode",
    MODIFIED_NODE: "ModifiedNode",
    PREVIOUS_FIELDS: "PreviousFields",
    FINAL_FIELDS: "FinalFields",
    NEW_FIELDS: "NewFields",
    NFTOKEN: "NFToken",
    ARRAY_END: "ArrayEndMarker",
    AFFECTED_NODES: "AffectedNodes",
    NFTOKENS: "NFTokens",
    TRANSACTION_RESULT: "TransactionResult",
    TAKER_PAYS_CURRENCY: "TakerPaysCurrency",
    TAKER_PAYS_ISSUER: "TakerPaysIssuer",
    TAKER_GETS_CURRENCY: "TakerGetsCurrency",
    TAKER_GETS_ISSUER: "TakerGetsIssuer",
    INDEXES: "Indexes",
    HASHES: "Hashes",
}

# --- enumerations ------------------------------------------------------------------------------
#: LedgerEntryType codes used by the ETL and the generator.
ACCOUNT_ROOT: Final = 0x0061
DIRECTORY_NODE: Final = 0x0064
LEDGER_HASHES: Final = 0x0068
OFFER: Final = 0x006F
RIPPLE_STATE: Final = 0x0072
NFTOKEN_PAGE: Final = 0x0050
NFTOKEN_OFFER: Final = 0x0037

LEDGER_ENTRY_NAMES: Final[dict[int, str]] = {
    0x0061: "AccountRoot",
    0x0064: "DirectoryNode",
    0x0066: "Amendments",
    0x0068: "LedgerHashes",
    0x006F: "Offer",
    0x0072: "RippleState",
    0x0073: "FeeSettings",
    0x0053: "SignerList",
    0x0050: "NFTokenPage",
    0x0037: "NFTokenOffer",
    0x0070: "DepositPreauth",
    0x0075: "Escrow",
    0x0078: "PayChannel",
    0x0043: "Check",
    0x0054: "Ticket",
    0x0079: "AMM",
    0x004E: "NegativeUNL",
}

#: TransactionType codes.
PAYMENT: Final = 0
OFFER_CREATE: Final = 7
OFFER_CANCEL: Final = 8
TRUST_SET: Final = 20
ACCOUNT_DELETE: Final = 21
NFTOKEN_MINT: Final = 25
NFTOKEN_BURN: Final = 26
NFTOKEN_CREATE_OFFER: Final = 27
NFTOKEN_CANCEL_OFFER: Final = 28
NFTOKEN_ACCEPT_OFFER: Final = 29
NFTOKEN_MODIFY: Final = 61

TRANSACTION_TYPE_NAMES: Final[dict[int, str]] = {
    0: "Payment",
    1: "EscrowCreate",
    2: "EscrowFinish",
    3: "AccountSet",
    4: "EscrowCancel",
    5: "SetRegularKey",
    7: "OfferCreate",
    8: "OfferCancel",
    10: "TicketCreate",
    12: "SignerListSet",
    13: "PaymentChannelCreate",
    14: "PaymentChannelFund",
    15: "PaymentChannelClaim",
    16: "CheckCreate",
    17: "CheckCash",
    18: "CheckCancel",
    19: "DepositPreauth",
    20: "TrustSet",
    21: "AccountDelete",
    25: "NFTokenMint",
    26: "NFTokenBurn",
    27: "NFTokenCreateOffer",
    28: "NFTokenCancelOffer",
    29: "NFTokenAcceptOffer",
    30: "Clawback",
    35: "AMMCreate",
    36: "AMMDeposit",
    37: "AMMWithdraw",
    38: "AMMVote",
    39: "AMMBid",
    40: "AMMDelete",
    61: "NFTokenModify",
    100: "EnableAmendment",
    101: "SetFee",
    102: "UNLModify",
}

#: TransactionResult codes that appear in metadata (tes and tec only: nothing else is applied).
TES_SUCCESS: Final = 0
RESULT_NAMES: Final[dict[int, str]] = {
    0: "tesSUCCESS",
    100: "tecCLAIM",
    101: "tecPATH_PARTIAL",
    102: "tecUNFUNDED_ADD",
    103: "tecUNFUNDED_OFFER",
    104: "tecUNFUNDED_PAYMENT",
    105: "tecFAILED_PROCESSING",
    121: "tecDIR_FULL",
    122: "tecINSUF_RESERVE_LINE",
    123: "tecINSUF_RESERVE_OFFER",
    124: "tecNO_DST",
    125: "tecNO_DST_INSUF_XRP",
    128: "tecPATH_DRY",
    129: "tecUNFUNDED",
    132: "tecOWNERS",
    140: "tecNO_ENTRY",
    141: "tecINSUFFICIENT_RESERVE",
    148: "tecEXPIRED",
    149: "tecDUPLICATE",
    150: "tecKILLED",
    151: "tecHAS_OBLIGATIONS",
}


def transaction_type_name(code: int) -> str:
    """The name of a TransactionType code (``Unknown(<n>)`` for codes not listed here)."""
    return TRANSACTION_TYPE_NAMES.get(code, f"Unknown({code})")


def ledger_entry_name(code: int) -> str:
    """The name of a LedgerEntryType code (``Unknown(<n>)`` for codes not listed here)."""
    return LEDGER_ENTRY_NAMES.get(code, f"Unknown({code})")


def result_name(code: int) -> str:
    """The name of a TransactionResult code (``Unknown(<n>)`` for codes not listed here)."""
    return RESULT_NAMES.get(code, f"Unknown({code})")
