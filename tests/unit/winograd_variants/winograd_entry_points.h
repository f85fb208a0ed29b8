// winograd_variant.h's entry points on one variant's tg_winograd, for the
// variant's file to include after its micro-kernel headers, inside its target
// region and an anonymous namespace, with kTailRows (its last row panel's
// filters in the tests) defined. No include guard: once per variant file.
void odd_map_inputs(const float* x0, const float* x1, float* v, int64_t first) {
  tg_winograd::input_tiles<24, 11, 13, false, 40>(x0, v, first);
  tg_winograd::input_tiles<16, 11, 13, false, 40>(x1, v + 24 * tg_sgemm::kNR, first);
}
void half_map_inputs(const float* x, float* v, int64_t first) { tg_winograd::input_tiles<40, 6, 6, true>(x, v, first); }
void panel(int64_t rows, const float* u, const float* v, float* m, float* y) {
  if (rows == kTailRows) tg_winograd::row_panel<40, false, tg_sgemm::kMR, kTailRows>(u, v, m, y);
  else tg_winograd::row_panel<40, false>(u, v, m, y);
}
void half_panel(const float* u, const float* v, float* m, float* y) { tg_winograd::row_panel<40, true>(u, v, m, y); }
