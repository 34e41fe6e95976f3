import sys

from crawler_ext.control.cli import main

sys.exit(main())
