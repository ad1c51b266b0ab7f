"""The OCI archive writer: the layout containerd's ``ctr images import`` reads."""

from __future__ import annotations

import hashlib
import io
import json
import tarfile
from pathlib import Path

from chainloom_dev.stack._oci import ImageConfig, write_archive


def _blob(archive: tarfile.TarFile, digest: str) -> bytes:
    member = archive.extractfile("blobs/sha256/" + digest.removeprefix("sha256:"))
    assert member is not None
    return member.read()


def test_archive_names_the_image_and_every_digest_matches(tmp_path: Path) -> None:
    rootfs = tmp_path / "rootfs"
    (rootfs / "bin").mkdir(parents=True)
    (rootfs / "bin" / "hello").write_text("#!/bin/sh\necho hi\n")
    (rootfs / "bin" / "hello").chmod(0o755)
    (rootfs / "bin" / "hi").symlink_to("hello")
    archive_path = tmp_path / "image.tar"
    config = ImageConfig(entrypoint=("/bin/hello",), user="65534", labels={"k": "v"})

    manifest_digest = write_archive(rootfs, archive_path, "docker.io/library/t:1", config)

    with tarfile.open(archive_path) as archive:
        assert json.loads(_blob_or(archive, "oci-layout")) == {"imageLayoutVersion": "1.0.0"}
        index = json.loads(_blob_or(archive, "index.json"))
        (entry,) = index["manifests"]
        assert entry["digest"] == manifest_digest
        assert entry["annotations"]["org.opencontainers.image.ref.name"] == "docker.io/library/t:1"
        manifest_bytes = _blob(archive, manifest_digest)
        assert f"sha256:{hashlib.sha256(manifest_bytes).hexdigest()}" == manifest_digest
        manifest = json.loads(manifest_bytes)
        image_config = json.loads(_blob(archive, manifest["config"]["digest"]))
        assert image_config["config"]["Entrypoint"] == ["/bin/hello"]
        assert image_config["config"]["User"] == "65534"
        assert image_config["config"]["Labels"] == {"k": "v"}
        (layer,) = manifest["layers"]
        layer_bytes = _blob(archive, layer["digest"])
        assert layer["size"] == len(layer_bytes)
        assert image_config["rootfs"]["diff_ids"] == [layer["digest"]]
    assert layer["digest"] == f"sha256:{hashlib.sha256(layer_bytes).hexdigest()}"
    with tarfile.open(fileobj=io.BytesIO(layer_bytes)) as files:
        assert files.getmember("bin/hello").mode & 0o777 == 0o755
        assert files.getmember("bin/hi").issym()
    assert not list(tmp_path.glob("*.layer"))  # the temporary layer file is gone


def _blob_or(archive: tarfile.TarFile, name: str) -> bytes:
    member = archive.extractfile(name)
    assert member is not None
    return member.read()
