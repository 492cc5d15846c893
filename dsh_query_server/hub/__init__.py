"""``dsh-query hub`` (docs/hub.md): one server per user and configuration that the command line,
every editor and every agent share over a private Unix socket.

The client side (key.py, paths.py, client.py, start.py) imports only the standard library and
the base modules, so a command that talks to a warm hub never loads the server; the hub side
(service.py, daemon.py) runs the query service once for every connection.
"""
