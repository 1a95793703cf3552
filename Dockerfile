# The ngxtls image: `docker build -t ngxtls .` then `docker run --rm -v "$PWD:/work" ngxtls lint
# nginx.conf`. Two stages: the first builds the Debian package (debian/, debhelper) from this
# tree, the second installs it with nginx (for `check --sandbox` and the version facts) on a
# slim Debian base and runs as a non-root user. scripts/build-image.sh builds the same image
# without a registry (mmdebstrap, then buildah) and tests it.
ARG DEBIAN_BASE=debian:bookworm-slim

FROM ${DEBIAN_BASE} AS build
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      build-essential debhelper cmake ninja-build pkg-config python3 \
      libssl-dev tao-pegtl-dev libcli11-dev libtoml11-dev nlohmann-json3-dev \
      libcpp-httplib-dev libbrotli-dev zlib1g-dev libyaml-cpp-dev libcrypt-dev \
 && rm -rf /var/lib/apt/lists/*
WORKDIR /src/ngxtls
COPY . .
RUN rm -rf build* obj-* && dpkg-buildpackage -b -uc -us && mkdir /debs && mv ../ngxtls_*.deb /debs/

FROM ${DEBIAN_BASE}
COPY --from=build /debs/ /tmp/debs/
RUN apt-get update \
 && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
      /tmp/debs/ngxtls_*.deb nginx \
 && rm -rf /var/lib/apt/lists/* /tmp/debs \
 && useradd --system --uid 10001 --home-dir /work --shell /usr/sbin/nologin ngxtls \
 && mkdir -p /work && chown ngxtls: /work
USER ngxtls
WORKDIR /work
ENTRYPOINT ["ngxtls"]
CMD ["--help"]
