// layer report
