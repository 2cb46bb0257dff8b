"""The local substrate: real kernel datapaths in Linux network namespaces on this machine (the testbed), link
conditions and tuning applied there, and resource sampling of the processes in it."""
