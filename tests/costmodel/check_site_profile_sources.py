# SPDX-License-Identifier: Apache-2.0
"""Every shipped GPU site profile (jobs/sites/*.yaml that is not a CPU-core site) names a source
for each of its constants, and has a dense peak for each precision it claims.

A constant is any number in the profile outside `scheduler:` and `calibrated.date`/`command`.
Its source is a comment on its line or the comment lines directly above it (or above the key
of the mapping holding it). A precision is claimed when the profile must have it (fp32, bf16,
fp16: site_profile.hpp), when the profile's calibrated gemm_efficiency names it, or when a
shipped validation set (validation/published/*.yaml) replays a row in it on the profile's
device. A peak whose source quotes a figure "with sparsity" must be half of it: the dense peak.
The profile's `peak_flops_source` names where its dense peaks come from (every MFU names it).
Each NCCL algorithm figure under links.<level>.nccl names its source like any constant.
Every GPU profile has a `gemm:` model (without one its GEMMs would run at the datasheet peak).
A `gemm:` model's e_max names the shipped validation set and version `predict --fit` fitted it
on, or the profile it is carried from: the same value ("not fitted for this device: the <profile>
profile's, an assumption"), or that profile's value times the ratio of the two devices' measured
matmul efficiency in validation/matmul-efficiency.yaml ("derived: the <profile> profile's <key> ×
matmul efficiency (table vN)"), checked here to the rounding; its sm_count cites a datasheet or
architecture whitepaper.
Usage: check_site_profile_sources.py SOURCE_DIR"""
import pathlib
import re
import sys

import yaml

import matmul_efficiency

source = pathlib.Path(sys.argv[1])
REQUIRED = ("fp32", "bf16", "fp16")
problems = []


def commented(lines, line):
    """Whether line (0-based) carries a trailing comment or directly follows comment lines."""
    text = lines[line]
    if re.search(r"\s#\s*\S", text):
        return True
    above = line - 1
    return above >= 0 and lines[above].lstrip().startswith("#")


def constants(node, path, parents):
    """(dotted key, value node, the lines of the keys holding it) of every number below node."""
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            name = f"{path}.{key.value}" if path else key.value
            yield from constants(value, name, parents + [key.start_mark.line])
    elif isinstance(node, yaml.ScalarNode) and node.tag.endswith(("int", "float")) or (
            isinstance(node, yaml.ScalarNode) and re.fullmatch(r"[-+]?[0-9.]+(e[-+]?[0-9]+)?", node.value or "")):
        yield path, node, parents


def validation_precisions():
    """{device: {precisions}} over the shipped validation sets' rows."""
    claimed = {}
    for path in sorted((source / "validation" / "published").glob("*.yaml")):
        for row in yaml.safe_load(path.read_text())["rows"]:
            precision = row["case"].get("precision") or row.get("assumed", {}).get("precision") or \
                row.get("assumed", {}).get("precision.dtype")
            if isinstance(precision, dict):
                precision = precision.get("dtype")
            if precision:
                claimed.setdefault(row["device"], set()).add(precision)
    return claimed


claimed_by_sets = validation_precisions()
efficiency = matmul_efficiency.efficiencies(source)
profiles = {p.stem: yaml.safe_load(p.read_text()) for p in (source / "jobs" / "sites").glob("*.yaml")}


def lent(name, key, lender_name, lender_key):
    """(the lender's profile, its gemm.<lender_key>) for constant `key` of profile `name`, or the
    problem when there is no such profile or constant."""
    lender = profiles.get(lender_name)
    if lender is None:
        return f"{name}: '{key}' is carried from profile '{lender_name}', which jobs/sites/ does not hold"
    value = (lender.get("gemm") or {}).get(lender_key)
    if value is None:
        return f"{name}: '{key}' is carried from {lender_name}'s gemm.{lender_key}, which it does not have"
    return lender, float(value)


def carried(name, key, value, comment):
    """The problem with a constant carried from another profile (borrowed or derived), None when it
    checks out, False when the comment says neither."""
    borrowed = re.search(r"not fitted for this device: the (\S+) profile's, an assumption", comment)
    derived = re.search(r"derived: the (\S+) profile's (\S+) × matmul efficiency \(table (v[0-9]+)\)", comment)
    match = borrowed or derived
    if not match:
        return False
    lender_key = derived.group(2) if derived else key.split(".")[-1]
    found = lent(name, key, match.group(1), lender_key)
    if isinstance(found, str):
        return found
    lender, expected = found
    if derived:
        precision, table = ("fp8" if lender_key == "e_max_fp8" else "bf16"), derived.group(3)
        mine = efficiency.get((profiles[name]["device"], precision, table))
        theirs = efficiency.get((lender["device"], precision, table))
        if mine is None or theirs is None:
            return (f"{name}: '{key}' is derived by matmul efficiency (table {table}, {precision}), but "
                    "validation/matmul-efficiency.yaml lacks this device or its lender's")
        expected *= mine / theirs
    if abs(float(value) - expected) > 0.0006 * max(1.0, expected):
        return (f"{name}: '{key}' = {value} but its comment carries it from {match.group(1)}: expected "
                f"{expected:.4f} ('{comment.strip()}')")
    return None


checked = 0
for path in sorted((source / "jobs" / "sites").glob("*.yaml")):
    text = path.read_text()
    profile = yaml.safe_load(text)
    if profile.get("device_is_cpu_core"):
        continue
    checked += 1
    lines = text.splitlines()
    root = yaml.compose(text)
    if not isinstance(profile.get("gemm"), dict):
        problems.append(f"{path.name}: no 'gemm:' model, so its GEMMs would run at the datasheet peak: give it one "
                        "(fitted, or carried from a fitted profile by matmul efficiency)")
    for key, node, parents in constants(root, "", []):
        if key.startswith("scheduler.") or key in ("calibrated.date", "calibrated.command"):
            continue
        if not any(commented(lines, line) for line in parents):
            problems.append(f"{path.name}: '{key}' ({node.value}, line {node.start_mark.line + 1}) names no source "
                            "(a comment on its line or directly above it)")
    # the source every MFU names beside it (peak_flops_source, written into predictions)
    if not str(profile.get("peak_flops_source") or "").strip():
        problems.append(f"{path.name}: no 'peak_flops_source': the dense peaks' source that every MFU names")
    peaks = profile.get("peak_flops", {})
    claimed = set(REQUIRED) | set((profile.get("calibrated") or {}).get("gemm_efficiency", {})) | \
        claimed_by_sets.get(profile["device"], set())
    def number(value):  # PyYAML (YAML 1.1) reads 312.0e12, without a sign in the exponent, as text
        try:
            return float(value)
        except (TypeError, ValueError):
            return None
    for precision in sorted(claimed):
        if not (number(peaks.get(precision)) or 0) > 0:
            problems.append(f"{path.name}: device '{profile['device']}' claims {precision} but peak_flops has no "
                            f"dense {precision} peak")
    for key, node, parents in constants(root, "", []):
        if not key.startswith("peak_flops."):
            continue
        comment = lines[node.start_mark.line].partition("#")[2]
        if "sparsity" not in comment:
            continue
        quoted = [float(n.replace(",", "")) for n in re.findall(r"[0-9][0-9,]*\.?[0-9]*", comment.split("sparsity")[0])]
        value = float(node.value) / 1e12
        if not any(abs(2 * value - q) <= 0.01 * q for q in quoted):
            problems.append(f"{path.name}: '{key}' = {node.value} is not half of the with-sparsity figure its "
                            f"source quotes ({comment.strip()}): not a dense peak")

    # the GEMM model's constants: e_max fitted by `predict --fit` on a named set and version (the
    # comment `--write-site` writes), sm_count from NVIDIA's datasheet or architecture whitepaper
    set_names = {p.stem for p in (source / "validation" / "published").glob("*.yaml")}
    for key, node, parents in constants(root, "", []):
        if key in ("gemm.e_max", "gemm.e_max_fp8", "gemm.e_max_sm80"):
            comment = lines[node.start_mark.line].partition("#")[2]
            fitted = re.search(r"fitted by predict --fit on (\S+) version ([0-9]+)", comment)
            problem = None if fitted and fitted.group(1) in set_names else carried(path.stem, key, node.value, comment)
            if problem is False:
                problems.append(f"{path.name}: '{key}' ({node.value}) must say 'fitted by predict --fit on "
                                "<shipped set> version N', 'not fitted for this device: the <profile> profile's, "
                                "an assumption' or 'derived: the <profile> profile's <key> × matmul efficiency "
                                f"(table vN)' on its line, got '{comment.strip()}'")
            elif problem:
                problems.append(problem)
        elif key in ("gemm.e_attention_sm80", "gemm.k_overhead_sm80"):
            # fitted, or derived from a published figure whose paper the comment (on its line or the
            # lines directly above) cites by arXiv number
            above = "\n".join(lines[max(0, node.start_mark.line - 3):node.start_mark.line + 1])
            if "fitted by predict --fit on " not in above and not re.search(r"arXiv:[0-9]{4}\.[0-9]{4,5}", above):
                problems.append(f"{path.name}: '{key}' ({node.value}) must say 'fitted by predict --fit on ...' or "
                                "cite the paper (arXiv:NNNN.NNNNN) its figure comes from")
            same = re.search(r"the (\S+) profile's:", above)  # the same derivation as another profile's
            found = lent(path.stem, key, same.group(1), key.split(".")[-1]) if same else None
            if isinstance(found, str):
                problems.append(found)
            elif found and abs(found[1] - float(node.value)) > 1e-9:
                problems.append(f"{path.name}: '{key}' ({node.value}) says it is the {same.group(1)} profile's, "
                                f"which has {found[1]}")
        elif key in ("gemm.k_overhead", "gemm.e_attention"):
            # fitted with e_max on sets of several model widths (k_overhead) or attention shares
            # (e_attention), or said to be another profile's
            comment = lines[node.start_mark.line].partition("#")[2]
            named = re.findall(r"(\S+) version [0-9]+", comment.partition("fitted by predict --fit on ")[2])
            fitted = "fitted by predict --fit on " in comment and named and all(n in set_names for n in named)
            borrowed = None if fitted else carried(path.stem, key, node.value, comment)
            if borrowed:
                problems.append(borrowed)
            elif not fitted and borrowed is False:
                problems.append(f"{path.name}: '{key}' ({node.value}) must say 'fitted by predict --fit on "
                                "<shipped set> version N[, ...]' or 'not fitted for this device: the <device> "
                                f"profile's, an assumption' on its line, got '{comment.strip()}'")
        elif key == "gemm.sm_count":
            above = "\n".join(lines[max(0, node.start_mark.line - 2):node.start_mark.line + 1])
            if not re.search(r"whitepaper|datasheet", above):
                problems.append(f"{path.name}: 'gemm.sm_count' ({node.value}) must cite NVIDIA's datasheet or "
                                "architecture whitepaper")

assert checked >= 5, f"only {checked} GPU site profiles found under {source / 'jobs' / 'sites'}"
assert not problems, "\n".join(problems)
print(f"site profile sources ok: {checked} GPU profiles, every constant sourced, every claimed precision has a "
      "dense peak")
