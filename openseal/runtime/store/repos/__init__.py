"""The repositories room of the store: one repository per aggregate, the events that change a
run, and the fenced transactions of a claim holder. Built on
:mod:`openseal.runtime.store.tables` and :mod:`openseal.runtime.store.db`."""
