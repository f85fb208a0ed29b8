"""Shared by every pytest under tests/: the CLI's `--arch host` uses the built-in host
spec, not a spec `tilegraph calibrate --save` kept on this machine (driver/saved_host_spec.h),
so schedules and the numbers tests assert do not depend on the machine's saved state.
Tests of the saved spec itself set TILEGRAPH_HOST_SPEC for their own commands."""
import os

os.environ.setdefault("TILEGRAPH_HOST_SPEC", "builtin")
