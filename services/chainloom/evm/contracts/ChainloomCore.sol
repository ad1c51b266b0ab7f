// SPDX-License-Identifier: Apache-2.0
// The core messaging contract of chainloom's dev chains: guardian sets and VAA verification.
//
// It verifies a signed VAA by the same rules as the Python verifier
// (services/chainloom/wormhole/verify.py), so a relayer sees on chain exactly what it saw
// off chain: the set the VAA names must be known; one to N signatures; guardian indices
// strictly ascending (refused already when parsing) and in range; every signature must
// recover (ecrecover, no message prefix, over keccak256(keccak256(body))) to the guardian in
// its slot; at least floor(2N/3)+1 signatures; a set with an expiration time is refused after
// it (0 = never expires, as the current set).
pragma solidity ^0.8.24;

contract ChainloomCore {
    struct GuardianSet {
        address[] keys;
        uint32 expirationTime;
    }

    struct Signature {
        bytes32 r;
        bytes32 s;
        uint8 v;
        uint8 guardianIndex;
    }

    struct VM {
        uint8 version;
        uint32 timestamp;
        uint32 nonce;
        uint16 emitterChainId;
        bytes32 emitterAddress;
        uint64 sequence;
        uint8 consistencyLevel;
        bytes payload;
        uint32 guardianSetIndex;
        Signature[] signatures;
        bytes32 hash;
    }

    uint256 private constant HEADER_LENGTH = 6;
    uint256 private constant SIGNATURE_LENGTH = 66;
    uint256 private constant BODY_LENGTH_WITHOUT_PAYLOAD = 51;

    address public owner;
    uint16 public immutable chainId;
    uint32 public currentGuardianSetIndex;
    mapping(uint32 => GuardianSet) private guardianSets;

    event GuardianSetSet(uint32 indexed index, uint256 size, uint32 expirationTime);

    constructor(uint16 chainId_) {
        owner = msg.sender;
        chainId = chainId_;
    }

    /// Install (or replace) guardian set `index`; the highest index installed is the current one.
    function setGuardianSet(uint32 index, address[] calldata keys, uint32 expirationTime) external {
        require(msg.sender == owner, "only the owner may set guardian sets");
        require(keys.length > 0 && keys.length <= 255, "a guardian set has 1..255 guardians");
        for (uint256 i = 0; i < keys.length; i++) {
            require(keys[i] != address(0), "a guardian address is zero");
        }
        guardianSets[index] = GuardianSet(keys, expirationTime);
        if (index > currentGuardianSetIndex) {
            currentGuardianSetIndex = index;
        }
        emit GuardianSetSet(index, keys.length, expirationTime);
    }

    function getGuardianSet(uint32 index)
        external
        view
        returns (address[] memory keys, uint32 expirationTime)
    {
        GuardianSet storage set = guardianSets[index];
        return (set.keys, set.expirationTime);
    }

    /// Signatures needed for a set of `size` guardians (13 of 19).
    function quorum(uint256 size) public pure returns (uint256) {
        return (size * 2) / 3 + 1;
    }

    /// Parse a signed VAA strictly; reverts naming what is malformed.
    function parseVM(bytes calldata encoded) public pure returns (VM memory vm) {
        require(encoded.length >= HEADER_LENGTH, "VAA truncated: header");
        vm.version = uint8(encoded[0]);
        require(vm.version == 1, "unsupported VAA version");
        vm.guardianSetIndex = uint32(bytes4(encoded[1:5]));
        uint256 count = uint8(encoded[5]);
        uint256 bodyOffset = HEADER_LENGTH + SIGNATURE_LENGTH * count;
        require(encoded.length >= bodyOffset, "VAA truncated: signatures");
        require(encoded.length >= bodyOffset + BODY_LENGTH_WITHOUT_PAYLOAD, "VAA truncated: body");
        vm.signatures = new Signature[](count);
        for (uint256 i = 0; i < count; i++) {
            uint256 at = HEADER_LENGTH + SIGNATURE_LENGTH * i;
            Signature memory signature = vm.signatures[i];
            signature.guardianIndex = uint8(encoded[at]);
            if (i > 0) {
                require(
                    signature.guardianIndex > vm.signatures[i - 1].guardianIndex,
                    "guardian indices must be strictly ascending"
                );
            }
            signature.r = bytes32(encoded[at + 1:at + 33]);
            signature.s = bytes32(encoded[at + 33:at + 65]);
            signature.v = uint8(encoded[at + 65]);
        }
        bytes calldata body = encoded[bodyOffset:];
        vm.hash = keccak256(abi.encodePacked(keccak256(body)));
        vm.timestamp = uint32(bytes4(body[0:4]));
        vm.nonce = uint32(bytes4(body[4:8]));
        vm.emitterChainId = uint16(bytes2(body[8:10]));
        vm.emitterAddress = bytes32(body[10:42]);
        vm.sequence = uint64(bytes8(body[42:50]));
        vm.consistencyLevel = uint8(body[50]);
        vm.payload = body[BODY_LENGTH_WITHOUT_PAYLOAD:];
    }

    /// Check a parsed VAA's signatures against the set it names; never reverts.
    function verifyVM(VM memory vm) public view returns (bool valid, string memory reason) {
        GuardianSet storage set = guardianSets[vm.guardianSetIndex];
        uint256 size = set.keys.length;
        if (size == 0) {
            return (false, "unknown guardian set");
        }
        uint256 count = vm.signatures.length;
        if (count == 0) {
            return (false, "no signatures");
        }
        if (count > size) {
            return (false, "more signatures than guardians");
        }
        for (uint256 i = 0; i < count; i++) {
            Signature memory signature = vm.signatures[i];
            if (signature.guardianIndex >= size) {
                return (false, "guardian index out of range");
            }
            uint8 recoveryId = signature.v >= 27 ? signature.v - 27 : signature.v;
            if (recoveryId > 1) {
                return (false, "invalid signature");
            }
            address signer = ecrecover(vm.hash, recoveryId + 27, signature.r, signature.s);
            if (signer == address(0)) {
                return (false, "invalid signature");
            }
            if (signer != set.keys[signature.guardianIndex]) {
                return (false, "signature does not match the guardian set");
            }
        }
        if (count < quorum(size)) {
            return (false, "quorum not met");
        }
        if (set.expirationTime != 0 && block.timestamp > set.expirationTime) {
            return (false, "guardian set has expired");
        }
        return (true, "");
    }

    /// parseVM then verifyVM: what the token bridge calls.
    function parseAndVerifyVM(bytes calldata encoded)
        external
        view
        returns (VM memory vm, bool valid, string memory reason)
    {
        vm = parseVM(encoded);
        (valid, reason) = verifyVM(vm);
    }
}
