#include "models/axial_transformer.h"

#include "autograd/factory.h"
#include "core/error.h"

namespace axiom::models {

namespace {
constexpr int64_t kRowAxis = 2, kColumnAxis = 1;  // on [B, H, W, D]: attend along W (rows) or H (columns)
}  // namespace

AxialTransformer::AxialTransformer(const ImageModelConfig& config, Generator& gen) : ImageModel(config, gen) {
  const ImageModelConfig& c = this->config();
  if (!c.axial()) {
    throw Error("AxialTransformer", "attention must be \"axial\", got \"", name_of(c.attention),
                "\" (a RasterTransformer; make_image_model picks the class)");
  }
  const int64_t d = c.features;
  outer_position_ = register_module("outer_position", make_positions(gen));
  outer_ = register_module("outer", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
  for (int64_t i = 0; i < c.upper_layers / 2; ++i) {
    outer_->push_back(std::make_shared<nn::TransformerBlock>(d, kRowAxis, gen, block_options(false)));  // unmasked row
    outer_->push_back(
        std::make_shared<nn::TransformerBlock>(d, kColumnAxis, gen, block_options(true)));  // masked column
  }
  inner_position_ =
      c.positions == Positions::shared ? outer_position_ : register_module("inner_position", make_positions(gen));
  if (c.inner == Inner::lstm) {
    inner_lstm_ = register_module("inner_lstm", std::make_shared<nn::LSTM>(d, d, gen));
  } else {
    inner_ = register_module("inner", std::make_shared<nn::ModuleList<nn::TransformerBlock>>());
    for (int64_t i = 0; i < c.row_layers; ++i)
      inner_->push_back(std::make_shared<nn::TransformerBlock>(d, kRowAxis, gen, block_options(true)));
  }
  add_encoder_and_logits(gen);
}

int64_t AxialTransformer::decoder_blocks() const {
  return static_cast<int64_t>(outer_->size()) + (inner_ ? static_cast<int64_t>(inner_->size()) : 0);
}

Tensor AxialTransformer::decode(const Tensor& h, const Tensor& context) const {
  const Tensor u = outer(h, context);
  const Tensor z = add(add(nn::shift_right(h), nn::shift_down(u)), inner_position(0, config().height));
  return inner(z);
}

Tensor AxialTransformer::outer(const Tensor& h, const Tensor& context) const {
  Tensor u = outer_position_->forward(h);
  if (context.defined()) u = add(u, context);
  u = dropout(u);
  u = run_blocks(*outer_, "outer", u, encoder_blocks());  // forward order: the encoder's blocks come first
  return u;
}

Tensor AxialTransformer::inner_position(int64_t first_row, int64_t rows) const {
  return inner_position_->embeddings().narrow(0, first_row, rows);
}

Tensor AxialTransformer::inner(const Tensor& z_in) const {
  Tensor z = dropout(z_in);
  if (inner_lstm_) {  // one LSTM along every row: [B, R, W, D] -> [B*R, W, D] -> back
    const Shape shape = z.shape();
    z = inner_lstm_->forward(z.reshape({shape[0] * shape[1], shape[2], shape[3]})).first.reshape(shape);
  } else {
    z = run_blocks(*inner_, "inner", z, encoder_blocks() + static_cast<int64_t>(outer_->size()));
  }
  return logits_of(z);
}

// --- the steps of the semi-parallel sampler -------------------------------------------------------

OuterRowState AxialTransformer::start_outer_rows() const {
  OuterRowState state;
  state.caches.assign(outer_->size() / 2, nn::AttentionCache(config().height));
  return state;
}

Tensor AxialTransformer::outer_step(const Tensor& h_row, const Tensor& context_row, OuterRowState& state) const {
  const int64_t i = state.rows, d = config().features, w = config().width;
  if (h_row.dim() != 3 || h_row.size(1) != w || h_row.size(2) != d) {
    throw Error(name(), "outer_step takes one row of each image, h_row [B, ", w, ", ", d, "], got ", h_row.shape());
  }
  if (i >= config().height) throw Error(name(), "outer_step: all ", config().height, " rows have been stepped");
  const int64_t b = h_row.size(0);
  Tensor u = add(h_row, outer_position_->embeddings().select(0, i));  // [B, W, D] + [W, D]
  if (context_row.defined()) u = add(u, context_row);
  u = dropout(u);
  for (size_t k = 0; k < outer_->size(); ++k) {
    const nn::TransformerBlock& block = (*outer_)[k];
    if (k % 2 == 0) {  // unmasked row block: the row alone, as a batch of one-row images [B, 1, W, D]
      u = block.forward(u.unsqueeze(1)).squeeze(1);
    } else {  // masked column block: B * W columns, one step down each
      u = block.forward_step(u.reshape({b * w, d}), state.caches[k / 2]).reshape({b, w, d});
    }
  }
  state.rows = i + 1;
  return u;
}

InnerRowState AxialTransformer::start_inner_row() const {
  InnerRowState state;
  if (inner_) state.caches.assign(inner_->size(), nn::AttentionCache(config().width));
  return state;
}

Tensor AxialTransformer::inner_step(const Tensor& z_j, InnerRowState& state) const {
  check_pixel("inner_step", "z_j", z_j);
  Tensor z = dropout(z_j);  // [B, D]
  if (inner_lstm_) {
    state.lstm = inner_lstm_->step(z, state.lstm);  // one LSTM step along the row
    z = state.lstm.h;
  } else {
    for (size_t k = 0; k < inner_->size(); ++k) z = (*inner_)[k].forward_step(z, state.caches[k]);
  }
  return logits_of(z);  // [B, 256]
}

namespace {

// One channel of N images, pixel by pixel in raster order (section 3.2.1): the channel encoder
// once, the outer decoder once per row, on that row alone, with a key/value cache of the rows above
// it, and the inner decoder once per pixel, with a cache of the pixels to its left. The inner
// decoder's input at pixel (i, j):
//   z = ShiftRight(h) + ShiftDown(u) + positions, where ShiftRight(h) at (i, j) is the embedding of
//   pixel (i, j-1) (zeros at j = 0) and ShiftDown(u) on row i is u on row i - 1 (zeros on row 0).
class AxialPixelDecoder : public PixelDecoder {
 public:
  AxialPixelDecoder(const AxialTransformer& model, const Tensor& images, int64_t channel)
      : model_(model),
        config_(model.config()),
        values_(images.select(1, channel)),  // [N, H, W], a view: fills in as the sampler draws
        context_(model.encode_channel(images, channel)),
        outer_(model.start_outer_rows()) {}

  Tensor next() override {  // the logits [N, 256] of pixel (i_, j_)
    if (i_ >= config_.height) throw Error(model_.name(), "start_decoding: every pixel of the channel has been decoded");
    if (j_ == 0) start_row();
    Tensor z = above_.select(1, j_);  // [N, D]
    if (j_ > 0) z = add(model_.embed(values_.select(1, i_).select(1, j_ - 1).contiguous()), z);
    const Tensor logits = model_.inner_step(add(z, position_.select(0, j_)), row_);  // [N, 256]
    if (++j_ == config_.width) j_ = 0, ++i_;
    return logits;
  }

 private:
  // Row i_ begins: row i_ - 1 is final, so the outer decoder steps down by it (ShiftDown(u) on row
  // i_ is u on row i_ - 1, [N, W, D]), and the inner decoder starts afresh.
  void start_row() {
    position_ = model_.inner_position(i_, 1).select(0, 0);  // [W, D]
    if (i_ == 0) {
      above_ = axiom::zeros({values_.size(0), config_.width, config_.features}, position_.dtype(), position_.device());
    } else {
      const Tensor h_row = model_.embed(values_.select(1, i_ - 1).contiguous());
      above_ = model_.outer_step(h_row, context_.defined() ? context_.select(1, i_ - 1) : Tensor(), outer_);
    }
    row_ = model_.start_inner_row();
  }

  const AxialTransformer& model_;
  const ImageModelConfig& config_;
  Tensor values_, context_;
  OuterRowState outer_;  // the column blocks' caches of the rows above
  InnerRowState row_;    // the row blocks' caches (or the LSTM's state) of the pixels to the left
  Tensor above_, position_;
  int64_t i_ = 0, j_ = 0;
};

}  // namespace

std::unique_ptr<PixelDecoder> AxialTransformer::start_decoding(const Tensor& images, int64_t channel) const {
  return std::make_unique<AxialPixelDecoder>(*this, images, channel);
}

}  // namespace axiom::models
