#include "engine/list_kinds.h"

#include <algorithm>
#include <cstdint>
#include <utility>

#include "engine/acquire_shape.h"

namespace fencelock::storage {

namespace {

// Inspects each of `names` with `start`, at most kInspectionsInFlight at once (each answer starts
// the next), then answers them all in order, or the first error. On the strand.
template <class Inspection>
class EachName : public std::enable_shared_from_this<EachName<Inspection>> {
 public:
  using Answer = std::function<void(Result<Inspection>)>;
  using Start = std::function<void(const std::string& name, Answer answer)>;
  using Done = std::function<void(Result<std::vector<Inspection>>)>;

  EachName(std::vector<std::string> names, Start start, Done done)
      : names_(std::move(names)),
        answers_(names_.size()),
        start_(std::move(start)),
        done_(std::move(done)) {}

  void run() {
    const std::size_t first = std::min(kInspectionsInFlight, names_.size());
    for (std::size_t i = 0; i < first; ++i) start_next();
  }

 private:
  void start_next() {
    const std::size_t i = started_++;
    start_(names_[i], [self = this->shared_from_this(), i](Result<Inspection> answer) {
      self->on_answer(i, std::move(answer));
    });
  }

  void on_answer(std::size_t i, Result<Inspection> answer) {
    if (!done_) return;  // an earlier answer failed the step
    if (!answer.ok()) {
      std::exchange(done_, nullptr)(Result<std::vector<Inspection>>(std::move(answer).error()));
      return;
    }
    answers_[i] = std::move(answer).value();
    if (++answered_ == names_.size()) {
      std::exchange(done_, nullptr)(Result<std::vector<Inspection>>(std::move(answers_)));
      return;
    }
    if (started_ < names_.size()) start_next();
  }

  std::vector<std::string> names_;
  std::vector<Inspection> answers_;
  Start start_;
  Done done_;
  std::size_t started_ = 0;
  std::size_t answered_ = 0;
};

template <class Inspection>
void inspect_each(std::vector<std::string> names, typename EachName<Inspection>::Start start,
                  typename EachName<Inspection>::Done done) {
  std::make_shared<EachName<Inspection>>(std::move(names), std::move(start), std::move(done))
      ->run();
}

// A step's inspection from per-name ones (each with `answered`, `held_on` and `maybe_held`).
template <class Inspection>
StepInspection step_of(const std::vector<Inspection>& inspections,
                       const std::vector<std::string>& names) {
  StepInspection step;
  step.answered = ~std::uint32_t{0};
  for (std::size_t i = 0; i < inspections.size(); ++i) {
    step.answered &= inspections[i].answered;
    step.held_on.push_back(inspections[i].held_on);
    if (inspections[i].maybe_held && !step.maybe_held && i < names.size())
      step.maybe_held = maybe_held_error(names[i]);
  }
  return step;
}

}  // namespace

void LockListKind::inspect(const std::shared_ptr<EngineCore>& core, std::vector<std::string> names,
                           std::function<void(Result<StepInspection>)> done) {
  std::vector<std::string> keys;
  keys.reserve(names.size());
  for (const std::string& name : names) keys.push_back(core->key_of(name));
  names_ = std::move(names);
  // `this` lives as long as the listing, which `done` holds.
  auto inspected = [this, done = std::move(done)](Result<Inspection> inspection) {
    if (!inspection.ok()) return done(Result<StepInspection>(std::move(inspection).error()));
    StepInspection step;
    for (std::size_t i = 0; i < inspection->answered.size(); ++i) {
      if (inspection->answered[i]) step.answered |= 1u << i;
    }
    step_ = std::move(inspection->keys);
    for (std::size_t i = 0; i < step_.size() && i < names_.size(); ++i) {
      const InspectedKey& key = step_[i];
      // Held on a bare quorum with a holder silent is not "not held": say so, never skip it.
      if (!key.status.held && key.maybe_held && !step.maybe_held)
        step.maybe_held = maybe_held_error(names_[i]);
      std::uint32_t nodes = 0;
      for (const std::size_t holder : key.holders) nodes |= 1u << holder;
      step.held_on.push_back(key.status.held ? std::vector<std::uint32_t>{nodes}
                                             : std::vector<std::uint32_t>{});
    }
    done(std::move(step));
  };
  std::make_shared<InspectOperation>(core, keys, std::move(inspected))->start();
}

void LockListKind::keep(std::size_t i) {
  LockStatus& status = step_[i].status;
  page_.locks.push_back(HeldLock{std::move(names_[i]), status.token, std::move(status.holder),
                                 status.remaining.value_or(std::chrono::milliseconds(0))});
}

LockPage LockListKind::take_page(std::string next) {
  page_.next = std::move(next);
  return std::move(page_);
}

template <class Traits>
void EachNameListKind<Traits>::inspect(const std::shared_ptr<EngineCore>& core,
                                       std::vector<std::string> names,
                                       std::function<void(Result<StepInspection>)> done) {
  names_ = names;
  auto start = [core](const std::string& name, typename EachName<Inspection>::Answer answer) {
    Traits::start(core, name, std::move(answer));
  };
  // `this` lives as long as the listing, which `done` holds.
  auto inspected = [this, done = std::move(done)](Result<std::vector<Inspection>> all) {
    if (!all.ok()) return done(Result<StepInspection>(std::move(all).error()));
    step_ = std::move(all).value();
    done(step_of(step_, names_));
  };
  inspect_each<Inspection>(std::move(names), std::move(start), std::move(inspected));
}

void SemaphoreListTraits::start(const std::shared_ptr<EngineCore>& core, const std::string& name,
                                std::function<void(Result<Inspection>)> answer) {
  std::make_shared<InspectSemaphoreOperation>(core, core->key_of(permit_config_name(name)),
                                              std::move(answer))
      ->start();
}

void RwLockListTraits::start(const std::shared_ptr<EngineCore>& core, const std::string& name,
                             std::function<void(Result<Inspection>)> answer) {
  std::make_shared<InspectRwOperation>(core, name, std::move(answer))->start();
}

template class EachNameListKind<SemaphoreListTraits>;
template class EachNameListKind<RwLockListTraits>;

}  // namespace fencelock::storage
