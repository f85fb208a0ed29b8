"""pytest setup for the security tests: skips them when tilegraph is not built."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
