// SPDX-License-Identifier: Apache-2.0
// The token bridge of chainloom's dev chains: completes Wormhole token transfers.
//
// completeTransfer takes a signed VAA and redeems it once: the core contract verifies it, its
// emitter must be the registered token bridge of its chain, its target chain must be this
// one, and its digest must not have been completed before. Payload 1 (a transfer) may be
// completed by anyone and pays its fee to whoever completes it (the relayer); payload 3 (a
// transfer with a payload) only by its recipient, and carries no fee. A token native to this
// chain is released from the bridge's custody; any other is minted as a wrapped ERC-20,
// created on first use (or from an attestation VAA, payload 2). Revert reasons are fixed
// strings a relayer classifies (docs/evm.md).
pragma solidity ^0.8.24;

import "./ChainloomCore.sol";
import "./ChainloomWrappedToken.sol";

interface INativeToken {
    function decimals() external view returns (uint8);

    function transfer(address to, uint256 amount) external returns (bool);
}

contract ChainloomTokenBridge {
    uint256 private constant TRANSFER_LENGTH = 133;
    uint256 private constant ATTESTATION_LENGTH = 100;

    ChainloomCore public immutable core;
    uint16 public immutable chainId;
    address public owner;
    mapping(uint16 => bytes32) public registeredEmitters;
    mapping(uint16 => mapping(bytes32 => address)) public wrappedAsset;
    mapping(bytes32 => bool) private completed;

    event EmitterRegistered(uint16 indexed chain, bytes32 emitter);
    event WrappedAssetCreated(uint16 indexed tokenChain, bytes32 indexed tokenAddress, address token);
    event TransferRedeemed(
        uint16 indexed emitterChainId,
        bytes32 indexed emitterAddress,
        uint64 indexed sequence,
        bytes32 digest,
        address token,
        address recipient,
        uint256 amount,
        uint256 fee,
        address relayer
    );

    constructor(address core_) {
        core = ChainloomCore(core_);
        chainId = ChainloomCore(core_).chainId();
        owner = msg.sender;
    }

    /// Trust `emitter` as the token bridge of `chain` (0 removes it).
    function registerEmitter(uint16 chain, bytes32 emitter) external {
        require(msg.sender == owner, "only the owner may register emitters");
        registeredEmitters[chain] = emitter;
        emit EmitterRegistered(chain, emitter);
    }

    function isTransferCompleted(bytes32 digest) external view returns (bool) {
        return completed[digest];
    }

    /// Redeem a token transfer (payload 1, or payload 3 by its recipient).
    function completeTransfer(bytes calldata encodedVm) external {
        ChainloomCore.VM memory vm = _verified(encodedVm);
        bytes calldata payload = encodedVm[encodedVm.length - vm.payload.length:];
        require(payload.length > 0, "not a transfer");
        uint8 payloadId = uint8(payload[0]);
        require(payloadId == 1 || payloadId == 3, "not a transfer");
        if (payloadId == 1) {
            require(payload.length == TRANSFER_LENGTH, "malformed transfer payload");
        } else {
            require(payload.length >= TRANSFER_LENGTH, "malformed transfer payload");
        }
        uint256 amount = uint256(bytes32(payload[1:33]));
        bytes32 tokenAddress = bytes32(payload[33:65]);
        uint16 tokenChain = uint16(bytes2(payload[65:67]));
        bytes32 to = bytes32(payload[67:99]);
        uint16 toChain = uint16(bytes2(payload[99:101]));
        uint256 fee = payloadId == 1 ? uint256(bytes32(payload[101:133])) : 0;

        require(toChain == chainId, "transfer is for another chain");
        require(!completed[vm.hash], "transfer already completed");
        require(uint256(to) >> 160 == 0, "recipient is not an EVM address");
        address recipient = address(uint160(uint256(to)));
        if (payloadId == 3) {
            require(msg.sender == recipient, "payload 3 may only be redeemed by its recipient");
        }
        require(fee <= amount, "fee exceeds amount");
        completed[vm.hash] = true;

        address token;
        if (tokenChain == chainId) {
            require(uint256(tokenAddress) >> 160 == 0, "token is not an EVM address");
            token = address(uint160(uint256(tokenAddress)));
            uint8 decimals = INativeToken(token).decimals();
            if (decimals > 8) {
                amount *= 10 ** (decimals - 8);
                fee *= 10 ** (decimals - 8);
            }
            require(INativeToken(token).transfer(recipient, amount - fee), "release failed");
            if (fee > 0) {
                require(INativeToken(token).transfer(msg.sender, fee), "release failed");
            }
        } else {
            token = wrappedAsset[tokenChain][tokenAddress];
            if (token == address(0)) {
                token = _createWrapped(tokenChain, tokenAddress, 8, "WRAPPED", "Chainloom wrapped asset");
            }
            ChainloomWrappedToken(token).mint(recipient, amount - fee);
            if (fee > 0) {
                ChainloomWrappedToken(token).mint(msg.sender, fee);
            }
        }
        emit TransferRedeemed(
            vm.emitterChainId, vm.emitterAddress, vm.sequence, vm.hash, token, recipient, amount, fee, msg.sender
        );
    }

    /// Create the wrapped token of an attested asset (payload 2) before its first transfer.
    function createWrapped(bytes calldata encodedVm) external returns (address token) {
        ChainloomCore.VM memory vm = _verified(encodedVm);
        bytes calldata payload = encodedVm[encodedVm.length - vm.payload.length:];
        require(payload.length == ATTESTATION_LENGTH && uint8(payload[0]) == 2, "not an attestation");
        bytes32 tokenAddress = bytes32(payload[1:33]);
        uint16 tokenChain = uint16(bytes2(payload[33:35]));
        uint8 decimals = uint8(payload[35]);
        require(tokenChain != chainId, "a native token is not wrapped");
        require(wrappedAsset[tokenChain][tokenAddress] == address(0), "wrapped asset exists");
        token = _createWrapped(
            tokenChain,
            tokenAddress,
            decimals > 8 ? 8 : decimals,
            _text(bytes32(payload[36:68])),
            _text(bytes32(payload[68:100]))
        );
    }

    function _verified(bytes calldata encodedVm) private view returns (ChainloomCore.VM memory vm) {
        bool valid;
        string memory reason;
        (vm, valid, reason) = core.parseAndVerifyVM(encodedVm);
        require(valid, string.concat("invalid VAA: ", reason));
        require(
            registeredEmitters[vm.emitterChainId] != bytes32(0)
                && registeredEmitters[vm.emitterChainId] == vm.emitterAddress,
            "unknown emitter"
        );
    }

    function _createWrapped(
        uint16 tokenChain,
        bytes32 tokenAddress,
        uint8 decimals,
        string memory symbol,
        string memory name
    ) private returns (address token) {
        token = address(new ChainloomWrappedToken(name, symbol, decimals, tokenChain, tokenAddress));
        wrappedAsset[tokenChain][tokenAddress] = token;
        emit WrappedAssetCreated(tokenChain, tokenAddress, token);
    }

    /// A NUL-padded 32-byte field as a string (the padding dropped).
    function _text(bytes32 field) private pure returns (string memory) {
        uint256 length = 0;
        while (length < 32 && field[length] != 0) {
            length++;
        }
        bytes memory text = new bytes(length);
        for (uint256 i = 0; i < length; i++) {
            text[i] = field[i];
        }
        return string(text);
    }
}
