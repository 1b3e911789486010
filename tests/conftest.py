import os
import sys

# Let the tests run from a checkout without installation too.
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "src"))
