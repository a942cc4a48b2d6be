"""The ``/api/v1`` routes, one module per area."""
