"""Generate the gRPC/protobuf Python modules from the ``.proto`` files in ``proto/``.

Generated code is never committed: it is built by ``scripts/setup`` (and on demand by this
module) with grpcio-tools, so it always matches the installed protobuf runtime. Output goes to
``chainloom/rpc/generated/`` with ``.pyi`` stubs from mypy-protobuf for ``mypy --strict``.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import sys
from pathlib import Path

PROTO_ROOT = Path(__file__).parent / "proto"
OUT_ROOT = Path(__file__).parent / "generated"
_STAMP = OUT_ROOT / ".stamp"


def _fingerprint(protos: list[Path]) -> str:
    digest = hashlib.sha256()
    for proto in protos:
        digest.update(str(proto.relative_to(PROTO_ROOT)).encode())
        digest.update(proto.read_bytes())
    return digest.hexdigest()


def is_current() -> bool:
    """Whether the generated code was built from the ``.proto`` files as they are now."""
    protos = sorted(PROTO_ROOT.rglob("*.proto")) if PROTO_ROOT.exists() else []
    return _STAMP.exists() and _STAMP.read_text() == _fingerprint(protos)


def build(*, force: bool = False, quiet: bool = False) -> bool:
    """Compile every proto under ``proto/``; return True if anything was (re)generated."""
    protos = sorted(PROTO_ROOT.rglob("*.proto")) if PROTO_ROOT.exists() else []
    OUT_ROOT.mkdir(exist_ok=True)
    (OUT_ROOT / "__init__.py").touch()
    fingerprint = _fingerprint(protos)
    if not force and _STAMP.exists() and _STAMP.read_text() == fingerprint:
        return False
    if protos:
        from grpc_tools import protoc  # noqa: PLC0415 - only the set-up has grpcio-tools

        include = str(Path(protoc.__file__).parent / "_proto")
        # The mypy-protobuf plugins sit next to the interpreter (.venv/bin), which need not
        # be on PATH when the set-up runs `.venv/bin/python -m chainloom.rpc.build`.
        scripts = Path(sys.executable).parent
        args = [
            "grpc_tools.protoc",
            f"-I{PROTO_ROOT}",
            f"-I{include}",
            f"--plugin=protoc-gen-mypy={scripts / 'protoc-gen-mypy'}",
            f"--plugin=protoc-gen-mypy_grpc={scripts / 'protoc-gen-mypy_grpc'}",
            f"--python_out={OUT_ROOT}",
            f"--grpc_python_out={OUT_ROOT}",
            f"--mypy_out={OUT_ROOT}",
            f"--mypy_grpc_out={OUT_ROOT}",
            *(str(p) for p in protos),
        ]
        if protoc.main(args) != 0:
            raise SystemExit("rpc.build: protoc failed")
        _make_packages_importable()
    _STAMP.write_text(fingerprint)
    if not quiet:
        print(f"rpc.build: generated code for {len(protos)} proto file(s)", file=sys.stderr)
    return True


def _make_packages_importable() -> None:
    """protoc emits absolute imports (``from spy.v1 import ...``); make them package-relative."""
    for directory in [OUT_ROOT, *(p for p in OUT_ROOT.rglob("*") if p.is_dir())]:
        (directory / "__init__.py").touch()
    top_level = {p.name for p in PROTO_ROOT.iterdir() if p.is_dir()}
    for module in OUT_ROOT.rglob("*.py*"):
        text = module.read_text()
        new = text
        for name in top_level:
            new = new.replace(f"from {name}.", f"from chainloom.rpc.generated.{name}.")
            new = new.replace(f"import {name}.", f"import chainloom.rpc.generated.{name}.")
        if module.suffix == ".pyi":
            # Stubs also name types by their full proto path (``spy.v1.spy_pb2.X``).
            for name in top_level:
                new = re.sub(rf"(?<![\w.]){name}\.(?=\w)", f"chainloom.rpc.generated.{name}.", new)
                new = new.replace(
                    "chainloom.rpc.generated.chainloom.rpc.generated.", "chainloom.rpc.generated."
                )
        if new != text:
            module.write_text(new)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--force", action="store_true", help="regenerate even if up to date")
    parser.add_argument("--quiet", action="store_true", help="print nothing when up to date")
    parser.add_argument(
        "--check", action="store_true", help="generate nothing; exit 1 if the code is stale"
    )
    options = parser.parse_args()
    if options.check:
        if not is_current():
            print(f"rpc.build: {OUT_ROOT} is stale: run scripts/generate", file=sys.stderr)
            raise SystemExit(1)
        print(f"rpc.build: {OUT_ROOT} is current", file=sys.stderr)
        return
    build(force=options.force, quiet=options.quiet)


if __name__ == "__main__":
    main()
