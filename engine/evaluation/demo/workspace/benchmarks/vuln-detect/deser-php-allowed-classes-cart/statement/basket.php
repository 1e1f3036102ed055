<?php
$items = unserialize(base64_decode($_POST['basket']), ['allowed_classes' => false]);
if (!is_array($items)) {
    $items = [];
}
echo count($items);
