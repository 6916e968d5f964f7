import sys

from lsp_copilot.cli.main import main

sys.exit(main())
