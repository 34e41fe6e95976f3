import sys

from crawler_ext.workers.cli import main

sys.exit(main())
