"""Interop scenarios with Bumble (Google's Python Bluetooth stack, bumble==0.0.236) as the independent peer.

    interop.py [--controllers ble|bumble|rootcanal|ble,bumble,rootcanal] [--ble PATH/TO/ble] [--central PATH/TO/interop-central]
               [--only TEXT] [--snoop] [--lab-args "--no-ext-adv --fragment-rx --acl-num 4 ..."]

Run it through run.sh, which installs Bumble and RootCanal into $REPO/.venv-bumble first (bootstrap.sh) and documents the options.
Standard library only: the Bumble peers and the trace decoders run with the venv's python.

The suite is three tables and one engine, a module each:
  suite/controllers.py  CONTROLLER_KINDS: how to start N linked virtual controllers of a kind, and what that kind is
                        known to do differently (facts the expectations read, never the kind's name);
  suite/scenarios/      SCENARIOS: every scenario as data, by area (gatt, cli, pairing, l2cap, gateway, advertising,
                        corebluetooth): which processes it starts (controllers, servers, clients) with their arguments,
                        readiness lines and time limits, and what it expects of their output; __init__.py lists them
                        in the order a run takes them;
  suite/engine.py       starting and stopping processes, ports, readiness, logs, captures, the steps -- written once;
  suite/common.py       the lab device's characteristics and the command lines of the peers and of ble;
  suite/main.py         the options and the run: every selected scenario on every kind, and the verdict line.

Adding a scenario is adding one entry to its area's module and to SCENARIOS; adding a controller kind is adding one
entry to CONTROLLER_KINDS. The Bumble peers are in peers/, one program each.
"""
