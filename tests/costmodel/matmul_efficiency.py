# SPDX-License-Identifier: Apache-2.0
"""validation/matmul-efficiency.yaml read once for the scripts that check carried GEMM constants."""
import pathlib

import yaml


def efficiencies(source_dir):
    """{(device, precision, table): mamf_tflops / theory_tflops} of SOURCE_DIR's table."""
    path = pathlib.Path(source_dir) / "validation" / "matmul-efficiency.yaml"
    return {(r["device"], r["precision"], r["table"]): float(r["mamf_tflops"]) / float(r["theory_tflops"])
            for r in yaml.safe_load(path.read_text())["rows"]}
