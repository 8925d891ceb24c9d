"""A PEP 517 / PEP 660 build backend for the fitrun package, standard
library only, so that `pip install python/` needs no index (pip's
isolated build environment would otherwise download setuptools).

It builds a pure-Python wheel of fitrun/ (every .py file), an sdist of
this directory, and an editable wheel (a .pth file naming this directory).
Metadata: the name, description and requires-python strings of
pyproject.toml's [project] table and fitrun.__version__.
"""
import base64
import hashlib
import io
import os
import re
import tarfile
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "fitrun"


def _project():
    """The [project] table's simple string keys (this backend reads no more)."""
    fields, section = {}, None
    with open(os.path.join(ROOT, "pyproject.toml"), encoding="utf-8") as f:
        for line in f:
            line = line.strip()
            if line.startswith("["):
                section = line
            elif section == "[project]":
                m = re.match(r'^([A-Za-z-]+)\s*=\s*"([^"]*)"\s*$', line)
                if m:
                    fields[m.group(1)] = m.group(2)
    with open(os.path.join(ROOT, PACKAGE, "__init__.py"), encoding="utf-8") as f:
        m = re.search(r'^__version__\s*=\s*"([^"]+)"', f.read(), re.M)
    if not m:
        raise RuntimeError(f"{PACKAGE}/__init__.py: no __version__ = \"...\"")
    fields["version"] = m.group(1)
    return fields


def _metadata(p):
    return (f"Metadata-Version: 2.1\nName: {p['name']}\nVersion: {p['version']}\n"
            f"Summary: {p.get('description', '')}\nRequires-Python: {p.get('requires-python', '>=3')}\n")


def _sources():
    """(path in the wheel, path on disk) of every module of the package."""
    out = []
    for top, dirs, files in os.walk(os.path.join(ROOT, PACKAGE)):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(top, name)
                out.append((os.path.relpath(path, ROOT).replace(os.sep, "/"), path))
    return out


def _dist_info(p):
    return f"{p['name']}-{p['version']}.dist-info"


def _wheel(directory, entries):
    """Write a py3-none-any wheel holding entries [(name, bytes)] + dist-info."""
    p = _project()
    info = _dist_info(p)
    entries = list(entries) + [
        (f"{info}/METADATA", _metadata(p).encode()),
        (f"{info}/WHEEL", b"Wheel-Version: 1.0\nGenerator: fitrun_backend\n"
                          b"Root-Is-Purelib: true\nTag: py3-none-any\n"),
    ]
    record = io.StringIO()
    for name, data in entries:
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.write(f"{name},sha256={digest},{len(data)}\n")
    record.write(f"{info}/RECORD,,\n")
    entries.append((f"{info}/RECORD", record.getvalue().encode()))
    filename = f"{p['name']}-{p['version']}-py3-none-any.whl"
    with zipfile.ZipFile(os.path.join(directory, filename), "w", zipfile.ZIP_DEFLATED) as z:
        for name, data in entries:
            z.writestr(zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0)), data,
                       compress_type=zipfile.ZIP_DEFLATED)
    return filename


def _read(path):
    with open(path, "rb") as f:
        return f.read()


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def get_requires_for_build_editable(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    p = _project()
    info = os.path.join(metadata_directory, _dist_info(p))
    os.makedirs(info, exist_ok=True)
    with open(os.path.join(info, "METADATA"), "w", encoding="utf-8") as f:
        f.write(_metadata(p))
    return _dist_info(p)


prepare_metadata_for_build_editable = prepare_metadata_for_build_wheel


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(name, _read(path)) for name, path in _sources()])


def build_editable(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory, [(f"_{PACKAGE}_editable.pth", (ROOT + "\n").encode())])


def build_sdist(sdist_directory, config_settings=None):
    p = _project()
    base = f"{p['name']}-{p['version']}"
    files = [("pyproject.toml", os.path.join(ROOT, "pyproject.toml")),
             ("_backend/fitrun_backend.py", os.path.abspath(__file__))] + _sources()
    with tarfile.open(os.path.join(sdist_directory, base + ".tar.gz"), "w:gz",
                      format=tarfile.PAX_FORMAT) as tar:
        for name, data in [(n, _read(path)) for n, path in files] + [("PKG-INFO", _metadata(p).encode())]:
            ti = tarfile.TarInfo(f"{base}/{name}")
            ti.size, ti.mode = len(data), 0o644
            tar.addfile(ti, io.BytesIO(data))
    return base + ".tar.gz"
