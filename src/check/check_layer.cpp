// layer check
