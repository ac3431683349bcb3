import sys

from triton_doctor.cli import main

sys.exit(main())
