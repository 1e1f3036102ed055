public class Refund {
  void apply(Order o) { o.refund(); o.refund(); }
}
