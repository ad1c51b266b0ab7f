"""Wallets: read from a file (or a mounted Secret), never shown, never pickled."""

from __future__ import annotations

import pickle

import pytest

from chainloom.relayer.errors import WalletError
from chainloom.relayer.wallet import Wallet

# The well-known first Hardhat/Anvil development key and its address (public test data).
KEY_HEX = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
ADDRESS = "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266"


def test_reads_a_hex_key_with_or_without_0x_and_a_trailing_newline(tmp_path):
    for text in (KEY_HEX, "0x" + KEY_HEX + "\n", "  " + KEY_HEX.upper() + "\n\n"):
        path = tmp_path / "key"
        path.write_text(text)
        wallet = Wallet.from_file(path)
        assert wallet.address == ADDRESS
        assert wallet.private_key_bytes() == bytes.fromhex(KEY_HEX)


def test_the_key_never_appears_in_repr_str_or_format(tmp_path):
    path = tmp_path / "key"
    path.write_text(KEY_HEX)
    wallet = Wallet.from_file(path)
    for shown in (repr(wallet), str(wallet), f"{wallet}", f"{wallet!r}"):
        assert KEY_HEX not in shown.lower()
        assert ADDRESS in shown


def test_a_wallet_cannot_be_pickled(tmp_path):
    path = tmp_path / "key"
    path.write_text(KEY_HEX)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(Wallet.from_file(path))


@pytest.mark.parametrize(
    "content",
    [
        KEY_HEX[:-2],  # too short
        KEY_HEX + "00",  # too long
        KEY_HEX[:-1] + "g",  # not hex
        f'{{"key": "{KEY_HEX}"}}',  # not the expected form
    ],
)
def test_malformed_key_files_are_refused_without_echoing_the_content(tmp_path, content):
    path = tmp_path / "key"
    path.write_text(content)
    with pytest.raises(WalletError) as caught:
        Wallet.from_file(path)
    message = str(caught.value)
    assert str(path) in message
    assert KEY_HEX[:20] not in message.lower()
    assert caught.value.__cause__ is None


def test_the_zero_key_is_not_a_secp256k1_key(tmp_path):
    path = tmp_path / "key"
    path.write_text("00" * 32)
    with pytest.raises(WalletError, match="not a valid secp256k1 key"):
        Wallet.from_file(path)


def test_a_missing_file_is_named(tmp_path):
    with pytest.raises(WalletError, match="does not exist"):
        Wallet.from_file(tmp_path / "absent")
