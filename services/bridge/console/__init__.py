"""The web console the bridge serves at /console (services.bridge.console.routes)."""
