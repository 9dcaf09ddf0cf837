from dialeval.cli import main

raise SystemExit(main())
