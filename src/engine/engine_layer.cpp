// layer engine
