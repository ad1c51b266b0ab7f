"""Writing a root filesystem directory as an OCI image archive that containerd can import.

No image registry is reachable from the machines the stack runs on, and Docker cannot run
there, so the node's images (the pod sandbox and chainloom itself) are built as directories and
packed here: one uncompressed layer, an image config, a manifest and an ``index.json`` whose
``org.opencontainers.image.ref.name`` annotation names the image, all inside one tar file that
``ctr images import`` reads (the OCI image layout, version 1.0).
"""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO

_LAYER_MEDIA_TYPE = "application/vnd.oci.image.layer.v1.tar"
_CONFIG_MEDIA_TYPE = "application/vnd.oci.image.config.v1+json"
_MANIFEST_MEDIA_TYPE = "application/vnd.oci.image.manifest.v1+json"


@dataclass(frozen=True, slots=True)
class ImageConfig:
    """What a container started from the image runs, and how."""

    entrypoint: tuple[str, ...]
    """The program and its leading arguments (a pod's ``command`` replaces it)."""

    env: tuple[str, ...] = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",)
    """``NAME=value`` entries every container of the image starts with."""

    user: str = ""
    """``uid`` or ``uid:gid`` the process runs as ('' for root)."""

    working_dir: str = "/"
    """The process's working directory."""

    labels: dict[str, str] = field(default_factory=dict)
    """Image labels (the input hash of a cached build, say)."""


def write_archive(rootfs: Path, archive: Path, reference: str, config: ImageConfig) -> str:
    """Pack ``rootfs`` into an OCI archive at ``archive`` named ``reference``; return the
    manifest digest (``sha256:...``)."""
    layer_path = archive.with_name(archive.name + ".layer")
    try:
        with layer_path.open("wb") as raw:
            hashing = _HashingWriter(raw)
            with tarfile.open(fileobj=hashing, mode="w|", format=tarfile.PAX_FORMAT) as layer:
                for child in sorted(rootfs.iterdir()):
                    layer.add(child, arcname=child.name, recursive=True)
        layer_digest, layer_size = f"sha256:{hashing.hexdigest()}", hashing.size
        image_config = {
            "architecture": "amd64",
            "os": "linux",
            "config": {
                "Entrypoint": list(config.entrypoint),
                "Env": list(config.env),
                "User": config.user,
                "WorkingDir": config.working_dir,
                "Labels": dict(config.labels),
            },
            "rootfs": {"type": "layers", "diff_ids": [layer_digest]},
        }
        config_blob = _json_bytes(image_config)
        manifest = {
            "schemaVersion": 2,
            "mediaType": _MANIFEST_MEDIA_TYPE,
            "config": _descriptor(_CONFIG_MEDIA_TYPE, config_blob),
            "layers": [
                {"mediaType": _LAYER_MEDIA_TYPE, "digest": layer_digest, "size": layer_size}
            ],
        }
        manifest_blob = _json_bytes(manifest)
        manifest_descriptor = _descriptor(_MANIFEST_MEDIA_TYPE, manifest_blob)
        index = {
            "schemaVersion": 2,
            "manifests": [
                {
                    **manifest_descriptor,
                    "platform": {"architecture": "amd64", "os": "linux"},
                    "annotations": {"org.opencontainers.image.ref.name": reference},
                }
            ],
        }
        with tarfile.open(archive, "w", format=tarfile.PAX_FORMAT) as out:
            _add_bytes(out, "oci-layout", _json_bytes({"imageLayoutVersion": "1.0.0"}))
            _add_bytes(out, "index.json", _json_bytes(index))
            _add_bytes(out, _blob_name(str(manifest_descriptor["digest"])), manifest_blob)
            _add_bytes(out, _blob_name(_sha256(config_blob)), config_blob)
            with layer_path.open("rb") as layer_file:
                info = tarfile.TarInfo(_blob_name(layer_digest))
                info.size = layer_size
                out.addfile(info, layer_file)
        return str(manifest_descriptor["digest"])
    finally:
        layer_path.unlink(missing_ok=True)


class _HashingWriter(io.RawIOBase):
    """A write-only stream that hashes and counts what passes through to ``target``."""

    def __init__(self, target: IO[bytes]) -> None:
        self._target = target
        self._hash = hashlib.sha256()
        self.size = 0

    def writable(self) -> bool:
        return True

    def write(self, data: bytes) -> int:  # type: ignore[override]
        self._hash.update(data)
        self.size += len(data)
        self._target.write(data)
        return len(data)

    def hexdigest(self) -> str:
        return self._hash.hexdigest()


def _json_bytes(value: object) -> bytes:
    return json.dumps(value, separators=(",", ":"), sort_keys=True).encode()


def _sha256(data: bytes) -> str:
    return f"sha256:{hashlib.sha256(data).hexdigest()}"


def _descriptor(media_type: str, blob: bytes) -> dict[str, object]:
    return {"mediaType": media_type, "digest": _sha256(blob), "size": len(blob)}


def _blob_name(digest: str) -> str:
    algorithm, _, hexdigest = digest.partition(":")
    return f"blobs/{algorithm}/{hexdigest}"


def _add_bytes(archive: tarfile.TarFile, name: str, data: bytes) -> None:
    info = tarfile.TarInfo(name)
    info.size = len(data)
    archive.addfile(info, io.BytesIO(data))
