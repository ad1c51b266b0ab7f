// SPDX-License-Identifier: Apache-2.0
// A minimal ERC-20 that only its token bridge may mint: a foreign asset on this chain.
pragma solidity ^0.8.24;

contract ChainloomWrappedToken {
    string public name;
    string public symbol;
    uint8 public immutable decimals;
    uint16 public immutable tokenChain;
    bytes32 public immutable tokenAddress;
    address public immutable bridge;
    uint256 public totalSupply;
    mapping(address => uint256) public balanceOf;
    mapping(address => mapping(address => uint256)) public allowance;

    event Transfer(address indexed from, address indexed to, uint256 value);
    event Approval(address indexed owner, address indexed spender, uint256 value);

    constructor(
        string memory name_,
        string memory symbol_,
        uint8 decimals_,
        uint16 tokenChain_,
        bytes32 tokenAddress_
    ) {
        name = name_;
        symbol = symbol_;
        decimals = decimals_;
        tokenChain = tokenChain_;
        tokenAddress = tokenAddress_;
        bridge = msg.sender;
    }

    function mint(address to, uint256 amount) external {
        require(msg.sender == bridge, "only the bridge may mint");
        totalSupply += amount;
        balanceOf[to] += amount;
        emit Transfer(address(0), to, amount);
    }

    function transfer(address to, uint256 amount) external returns (bool) {
        _move(msg.sender, to, amount);
        return true;
    }

    function approve(address spender, uint256 amount) external returns (bool) {
        allowance[msg.sender][spender] = amount;
        emit Approval(msg.sender, spender, amount);
        return true;
    }

    function transferFrom(address from, address to, uint256 amount) external returns (bool) {
        uint256 allowed = allowance[from][msg.sender];
        require(allowed >= amount, "allowance exceeded");
        if (allowed != type(uint256).max) {
            allowance[from][msg.sender] = allowed - amount;
        }
        _move(from, to, amount);
        return true;
    }

    function _move(address from, address to, uint256 amount) private {
        require(balanceOf[from] >= amount, "balance too low");
        balanceOf[from] -= amount;
        balanceOf[to] += amount;
        emit Transfer(from, to, amount);
    }
}
