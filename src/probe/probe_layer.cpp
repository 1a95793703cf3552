// layer probe
