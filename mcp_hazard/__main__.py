from mcp_hazard.cli import main

raise SystemExit(main())
