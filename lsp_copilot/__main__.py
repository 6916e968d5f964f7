import sys

from lsp_copilot.cli import main

sys.exit(main())
