// layer tls
