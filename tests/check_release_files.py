"""The files a centre needs to package scalebench: LICENSE (Apache-2.0), NOTICE, and
CITATION.cff, whose version is CMake's project VERSION, which `scalebench --version` names with
its commit. Usage: check_release_files.py SOURCE_DIR SCALEBENCH PROJECT_VERSION"""
import pathlib
import re
import subprocess
import sys

import yaml

source, exe, version = pathlib.Path(sys.argv[1]), sys.argv[2], sys.argv[3]
licence = (source / "LICENSE").read_text()
assert "Apache License" in licence and "Version 2.0, January 2004" in licence, "LICENSE is not Apache-2.0"
assert (source / "NOTICE").read_text().startswith("scalebench\n"), "NOTICE does not name scalebench"
citation = yaml.safe_load((source / "CITATION.cff").read_text())
for key in ("cff-version", "message", "title", "authors", "version", "license"):
    assert key in citation, f"CITATION.cff has no {key}"
assert str(citation["version"]) == version, f"CITATION.cff version {citation['version']} != CMake {version}"
assert citation["license"] == "Apache-2.0", citation["license"]
out = subprocess.run([exe, "--version"], capture_output=True, text=True, check=True).stdout.strip().splitlines()
assert re.fullmatch(rf"scalebench {re.escape(version)} \(git \S+, commit ([0-9a-f]{{12}}|unknown)\)", out[0]), out
assert [line.split(":")[0] for line in out[1:]] == ["resources", "data sets", "site profiles"], out
print("release files ok:", out[0])
