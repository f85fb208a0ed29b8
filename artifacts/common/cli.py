"""The command line every experiment script takes."""

from __future__ import annotations

import argparse


def parser(doc: str) -> argparse.ArgumentParser:
    """--quick, and --threads: 1 by default because on a shared or busy machine
    (CI) all-core numbers measure the neighbours: an OpenMP barrier waits for a
    descheduled thread at every kernel (tilegraph) or operator (onnxruntime)."""
    ap = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="small models, few iterations (CI)")
    ap.add_argument("--threads", type=int, default=1, help="threads of every engine (default 1)")
    return ap


def parse(doc: str, argv=None) -> argparse.Namespace:
    ap = parser(doc)
    args = ap.parse_args(argv)
    if args.threads < 1:
        ap.error("--threads must be >= 1")
    return args
