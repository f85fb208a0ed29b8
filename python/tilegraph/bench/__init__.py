"""tilegraph's benchmark suite: stable IDs, presets, results, comparison, dashboard.

    python -m tilegraph.bench export --preset x86_64 > configs.json
    python -m tilegraph.bench run configs.json --out results.json [--executor ray --address HOST:PORT]
    python -m tilegraph.bench compare base.json results.json
    python -m tilegraph.bench explain r-0123456789ab
    python -m tilegraph.bench dashboard results/*.json --out dashboard/

Modules, one concept each:

* definitions  -- Model, CompileConfig, RunConfig, DeviceSpec and the two benchmark kinds
* ids          -- how IDs are derived, and why they stay put
* catalog      -- every leaf definition, with its fixed ID
* presets      -- x86_64, cuda, arm64, comp-stats, all, large
* suite        -- a set of benchmarks and its config-file form (export / run input)
* workspace    -- artifact paths and the exact commands run (shared by run and explain)
* devices      -- which devices this machine has, and what is recorded about them
* measure      -- child processes: latency statistics, peak host / device memory
* peers        -- onnxruntime and PyTorch timed as peers
* compile_step / run_step / run -- executing a suite into a results file
* ray_executor / resources -- the same on a Ray cluster (`run --executor ray`, docs/farm.md)
* results      -- the results file format and provenance (commit)
* compare / explain / dashboard (+ dashboard_page) -- the other verbs
"""
