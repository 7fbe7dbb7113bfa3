#!/usr/bin/env python3
"""The training-step and sampling tables of apps/bench/README.md, from one run on this CPU.

Runs `axiom bench train --json` (and optionally an older axiom build and PyTorch's
torch_reference.py) for each config, the sides alternating, for --rounds rounds, and prints
a markdown table of the medians: step time, the step's products at the best GEMM rate of
the same run (OpenBLAS or oneDNN, shape by shape: apps/bench/products.h) and the step's
share of that limit, named with the CPU model, its ISA and the date. With --sample, the
same for `axiom bench sample`: the fast sampler's milliseconds per image at batch 1 and 16.

    /usr/bin/python3 apps/bench/same_run.py --configs tiny,small,medium --rounds 5 \\
        [--before /tmp/before/build/apps/axiom] [--torch] [--precision bfloat16]
    /usr/bin/python3 apps/bench/same_run.py --sample --configs tiny --rounds 7 --torch
"""
import argparse
import datetime
import json
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_description():
    """'AMD EPYC (AVX2, AVX-512, AVX512-BF16)': the CPU's model name and vector ISA, as /proc/cpuinfo
    (what lscpu reads) gives them."""
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            text = cpuinfo.read()
    except OSError:
        text = ""
    model = re.search(r"model name\s*:\s*(.+)", text)
    flags_line = re.search(r"flags\s*:\s*(.+)", text)
    flags = set(flags_line.group(1).split()) if flags_line else set()
    isa = [name for flag, name in (("avx2", "AVX2"), ("avx512f", "AVX-512"), ("avx512_bf16", "AVX512-BF16"),
                                   ("amx_bf16", "AMX")) if flag in flags]
    return f"{model.group(1).strip() if model else 'unknown CPU'} ({', '.join(isa) or 'no AVX2'})"


def figures(command):
    """{case: (value, ratio)} of one benchmark run's JSON lines."""
    run = subprocess.run(command, capture_output=True, text=True)
    if run.returncode != 0:
        sys.exit(f"same_run: {' '.join(command)} failed:\n{run.stderr}")
    found = {}
    for line in run.stdout.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            found[record["case"]] = (record["value"], record.get("ratio"))
    return found


def sides(args, config):
    """The commands of one round for `config`, by side name."""
    if args.sample:
        return sample_sides(args, config)
    commands = {}
    # both sides in the same precision: float32 is every build's default; "--matmul" is the flag's
    # first name, which older builds know too
    precision = [] if args.precision == "float32" else ["--matmul", args.precision]
    if args.before:
        commands["before"] = [args.before, "bench", "train", "--config", config, "--json", "--threads",
                              str(args.threads)] + precision
    commands["axiom"] = [args.axiom, "bench", "train", "--config", config, "--json", "--threads",
                         str(args.threads)] + precision
    if args.torch:
        autocast = ["--autocast", "bfloat16"] if args.precision == "bfloat16" else []
        commands["pytorch"] = [sys.executable, os.path.join(HERE, "torch_reference.py"), "train", "--config", config,
                               "--threads", str(args.threads), "--json"] + autocast
    return commands


def sample_sides(args, config):
    """The commands of one round of sampling `config`, by side name (float32: sampling runs no
    training products)."""
    commands = {}
    for side, binary in (("before", args.before), ("axiom", args.axiom)):
        if binary:
            commands[side] = [binary, "bench", "sample", "--config", config, "--json", "--threads", str(args.threads)]
    if args.torch:
        commands["pytorch"] = [sys.executable, os.path.join(HERE, "torch_reference.py"), "sample", "--config",
                               config, "--threads", str(args.threads), "--json"]
    return commands


def median(runs, side, case):
    values = [run[case][0] for run in runs[side] if case in run]
    return statistics.median(values) if values else None


def row(config, runs, args):
    step = {side: median(runs, side, f"{config}_step") for side in runs}
    limit = median(runs, "axiom", f"{config}_products_at_best_rate")
    cells = [config]
    if args.before:
        cells.append(f"{step['before']:.2f} s")
    cells.append(f"{step['axiom']:.2f} s")
    if args.torch:
        cells += [f"{step['pytorch']:.2f} s", f"{step['axiom'] / step['pytorch']:.2f}"]
    share = [run[f"{config}_products_at_best_rate"][0] / run[f"{config}_step"][0] for run in runs["axiom"]]
    cells += [f"{limit:.2f} s", f"{statistics.median(share):.2f} ({min(share):.2f}-{max(share):.2f})"]
    return "| " + " | ".join(cells) + " |"


SAMPLE_BATCHES = (1, 16)


def sample_rows(config, runs, args):
    """One row a batch size: the fast sampler's median ms/image on each side (and axiom's share of
    PyTorch's, the medians' ratio)."""
    lines = []
    for batch in SAMPLE_BATCHES:
        case = f"{config}_fast_batch{batch}"
        cells = [f"sampling {config}, batch {batch}"]
        cells += [f"{median(runs, side, case):.1f}" for side in ("before", "axiom") if side in runs]
        if args.torch:
            cells += [f"{median(runs, 'pytorch', case):.1f}",
                      f"{median(runs, 'axiom', case) / median(runs, 'pytorch', case):.3f}"]
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def at_least_one(text):
    """--rounds and --threads: a whole number of 1 or more (0 rounds would leave no figure)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of at least 1")
    return value


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--axiom", default="build/apps/axiom")
    parser.add_argument("--before", help="an older axiom binary to time beside it")
    parser.add_argument("--torch", action="store_true", help="PyTorch's step (or sampler) too (torch_reference.py)")
    parser.add_argument("--configs", default="tiny,small,medium")
    parser.add_argument("--rounds", type=at_least_one, default=5)
    parser.add_argument("--threads", type=at_least_one, default=2)
    parser.add_argument("--precision", "--matmul", choices=["float32", "bfloat16"], default="float32",
                        help="axiom's --precision (PyTorch's autocast for bfloat16)")
    parser.add_argument("--sample", action="store_true",
                        help="time the fast sampler (axiom bench sample) instead of a training step")
    args = parser.parse_args()
    if args.sample and args.precision != "float32":
        parser.error("--sample runs in float32: sampling has no --precision")

    header = ["ms/image" if args.sample else "training step"] + (["before"] if args.before else []) + ["axiom"]
    header += ["PyTorch", "axiom / PyTorch"] if args.torch else []
    header += [] if args.sample else ["products at the best rate", "limit / step (range)"]
    lines = []
    for config in args.configs.split(","):
        runs = {}
        for _ in range(args.rounds):
            for side, command in sides(args, config).items():
                runs.setdefault(side, []).append(figures(command))
                shown = f"{config}_fast_batch16" if args.sample else f"{config}_step"
                print(f"  {config} {side}: {runs[side][-1].get(shown, ('?',))[0]}", file=sys.stderr)
        lines += sample_rows(config, runs, args) if args.sample else [row(config, runs, args)]
    what = "the fast sampler" if args.sample else f"{args.precision} products"
    print(f"{cpu_description()}, {args.threads} threads, {what}, medians of {args.rounds} "
          f"alternating runs, {datetime.date.today()}:\n")
    print("| " + " | ".join(header) + " |")
    print("|" + "---|" * len(header))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
