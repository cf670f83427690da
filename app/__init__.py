"""The web layer: Starlette application, pages, WebSocket endpoints."""
