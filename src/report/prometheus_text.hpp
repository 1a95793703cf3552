#pragma once
// Pieces of Prometheus's text exposition format 0.0.4 shared by `probe --format prometheus` and
// the `serve` exporter. https://prometheus.io/docs/instrumenting/exposition_formats/

#include <string>

namespace ngxtls::report {

/// `v` escaped for a label value between double quotes: backslash, double quote and line feed
/// become `\\`, `\"` and `\n`, as the format requires.
std::string prometheus_label_value(const std::string& v);

}  // namespace ngxtls::report
