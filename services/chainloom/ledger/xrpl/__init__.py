"""XRPL binary formats, pure: the canonical STObject codec, the parts of transactions and
metadata the ETL needs, addresses, hashes and SHAMap roots, and keylets."""
