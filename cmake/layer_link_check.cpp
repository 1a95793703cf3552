// The program of each layer's link check (CMakeLists.txt, ngxtls_layer): it calls nothing; the
// link pulls in every object of the layer, whose references must resolve within the layer's
// own dependencies.
int main() {
  return 0;
}
