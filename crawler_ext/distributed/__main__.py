import sys

from crawler_ext.distributed.cli import main

sys.exit(main())
