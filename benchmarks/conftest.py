import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))   # so the tests can `import bench`
