# SPDX-License-Identifier: Apache-2.0
"""The files a centre needs to package scalebench: LICENSE (Apache-2.0), NOTICE, and
CITATION.cff, whose version is CMake's project VERSION, which `scalebench --version` names with
its commit; and an SPDX-License-Identifier line at the top (after a #! line) of every C++, CUDA,
Python, shell and CMake source. Usage: check_release_files.py SOURCE_DIR SCALEBENCH PROJECT_VERSION"""
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
SPDX = "SPDX-License-Identifier: Apache-2.0"
SOURCES = {".cpp", ".hpp", ".h", ".cu", ".cuh", ".py", ".sh", ".cmake"}
unlabelled = []
checked = 0
for folder in ("src", "models", "tests", "bench", "fuzz", "scripts", "analysis", "cmake", "packaging", ".ci"):
    for path in sorted((source / folder).rglob("*")):
        # expected outputs (golden job scripts) are data, compared byte for byte, not sources
        if not path.is_file() or {"bad_inputs", "__pycache__", "golden"} & set(path.parts):
            continue
        if path.suffix in SOURCES or path.name in ("CMakeLists.txt", "run"):
            checked += 1
            head = path.read_text(errors="replace").splitlines()[:2]
            if not any(SPDX in line for line in head):
                unlabelled.append(str(path.relative_to(source)))
assert SPDX in (source / "CMakeLists.txt").read_text().splitlines()[0]
assert not unlabelled, f"{len(unlabelled)} sources without '{SPDX}' in their first lines: {unlabelled[:10]}"
print("release files ok:", out[0], f"({checked} sources carry the SPDX identifier)")
