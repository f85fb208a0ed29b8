"""What every experiment script under artifacts/ shares.

The scripts reproduce the Welder paper's figures and tables on the machine at
hand. Each one: finds what the machine has (``machine``), compiles models with
``tilegraph tune`` (``compile``), times them next to the peers present in the
same run (``timing``, over ``tilegraph.runner`` and onnxruntime), and writes a
CSV (``tables``), a PNG chart (``charts``) and its section of
``artifacts/out/report.md`` (``report``), naming every column it skipped and why.
Timing is tilegraph's own (the ctypes runner, tilegraph.inputs' seeded inputs,
test_acc's reference run and comparison): nothing here re-implements it.
"""
