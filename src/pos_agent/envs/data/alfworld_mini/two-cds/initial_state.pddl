;; alfworld-mini: two-cds (office)
;; One CD lies on a desk, the other in a closed drawer; put both on a shelf.
;; Display names: Bed_bar_1 = bed 1, Desk_bar_2 = desk 1, Desk_bar_1 = desk 2, Drawer_bar_4 = drawer 1, Drawer_bar_3 = drawer 2, Drawer_bar_2 = drawer 3, Drawer_bar_1 = drawer 4, GarbageCan_bar_1 = garbagecan 1, Safe_bar_1 = safe 1, Shelf_bar_3 = shelf 1, Shelf_bar_2 = shelf 2, Shelf_bar_1 = shelf 3, SideTable_bar_1 = sidetable 1
;;                CD_bar_2 = cd 1, CD_bar_1 = cd 2, CreditCard_bar_1 = creditcard 1, Pen_bar_1 = pen 1, Pencil_bar_1 = pencil 1, Book_bar_1 = book 1, AlarmClock_bar_1 = alarmclock 1, Mug_bar_1 = mug 1, CellPhone_bar_1 = cellphone 1, Vase_bar_1 = vase 1
(define (problem two_cds)
    (:domain alfred)
    (:objects
        agent1 - agent
        AlarmClockType - otype
        BookType - otype
        ButterKnifeType - otype
        CDType - otype
        CellPhoneType - otype
        CreditCardType - otype
        KnifeType - otype
        MugType - otype
        PenType - otype
        PencilType - otype
        VaseType - otype
        BedType - rtype
        DeskType - rtype
        DrawerType - rtype
        FridgeType - rtype
        GarbageCanType - rtype
        MicrowaveType - rtype
        SafeType - rtype
        ShelfType - rtype
        SideTableType - rtype
        SinkBasinType - rtype
        CD_bar_2 - object
        CD_bar_1 - object
        CreditCard_bar_1 - object
        Pen_bar_1 - object
        Pencil_bar_1 - object
        Book_bar_1 - object
        AlarmClock_bar_1 - object
        Mug_bar_1 - object
        CellPhone_bar_1 - object
        Vase_bar_1 - object
        Bed_bar_1 - receptacle
        Desk_bar_2 - receptacle
        Desk_bar_1 - receptacle
        Drawer_bar_4 - receptacle
        Drawer_bar_3 - receptacle
        Drawer_bar_2 - receptacle
        Drawer_bar_1 - receptacle
        GarbageCan_bar_1 - receptacle
        Safe_bar_1 - receptacle
        Shelf_bar_3 - receptacle
        Shelf_bar_2 - receptacle
        Shelf_bar_1 - receptacle
        SideTable_bar_1 - receptacle
        loc_bar_0 - location
        loc_bar_1 - location
        loc_bar_2 - location
        loc_bar_3 - location
        loc_bar_4 - location
        loc_bar_5 - location
        loc_bar_6 - location
        loc_bar_7 - location
        loc_bar_8 - location
        loc_bar_9 - location
        loc_bar_10 - location
        loc_bar_11 - location
        loc_bar_12 - location
        loc_bar_13 - location
    )
    (:init
        (atLocation agent1 loc_bar_0)
        (receptacleType Bed_bar_1 BedType)
        (receptacleAtLocation Bed_bar_1 loc_bar_1)
        (receptacleType Desk_bar_2 DeskType)
        (receptacleAtLocation Desk_bar_2 loc_bar_2)
        (receptacleType Desk_bar_1 DeskType)
        (receptacleAtLocation Desk_bar_1 loc_bar_3)
        (receptacleType Drawer_bar_4 DrawerType)
        (receptacleAtLocation Drawer_bar_4 loc_bar_4)
        (openable Drawer_bar_4)
        (receptacleType Drawer_bar_3 DrawerType)
        (receptacleAtLocation Drawer_bar_3 loc_bar_5)
        (openable Drawer_bar_3)
        (receptacleType Drawer_bar_2 DrawerType)
        (receptacleAtLocation Drawer_bar_2 loc_bar_6)
        (openable Drawer_bar_2)
        (receptacleType Drawer_bar_1 DrawerType)
        (receptacleAtLocation Drawer_bar_1 loc_bar_7)
        (openable Drawer_bar_1)
        (receptacleType GarbageCan_bar_1 GarbageCanType)
        (receptacleAtLocation GarbageCan_bar_1 loc_bar_8)
        (receptacleType Safe_bar_1 SafeType)
        (receptacleAtLocation Safe_bar_1 loc_bar_9)
        (openable Safe_bar_1)
        (receptacleType Shelf_bar_3 ShelfType)
        (receptacleAtLocation Shelf_bar_3 loc_bar_10)
        (receptacleType Shelf_bar_2 ShelfType)
        (receptacleAtLocation Shelf_bar_2 loc_bar_11)
        (receptacleType Shelf_bar_1 ShelfType)
        (receptacleAtLocation Shelf_bar_1 loc_bar_12)
        (receptacleType SideTable_bar_1 SideTableType)
        (receptacleAtLocation SideTable_bar_1 loc_bar_13)
        (objectType CD_bar_2 CDType)
        (inReceptacle CD_bar_2 Desk_bar_1)
        (objectAtLocation CD_bar_2 loc_bar_3)
        (pickupable CD_bar_2)
        (objectType CD_bar_1 CDType)
        (inReceptacle CD_bar_1 Drawer_bar_2)
        (objectAtLocation CD_bar_1 loc_bar_6)
        (pickupable CD_bar_1)
        (objectType CreditCard_bar_1 CreditCardType)
        (inReceptacle CreditCard_bar_1 Desk_bar_2)
        (objectAtLocation CreditCard_bar_1 loc_bar_2)
        (pickupable CreditCard_bar_1)
        (objectType Pen_bar_1 PenType)
        (inReceptacle Pen_bar_1 Desk_bar_2)
        (objectAtLocation Pen_bar_1 loc_bar_2)
        (pickupable Pen_bar_1)
        (objectType Pencil_bar_1 PencilType)
        (inReceptacle Pencil_bar_1 Drawer_bar_4)
        (objectAtLocation Pencil_bar_1 loc_bar_4)
        (pickupable Pencil_bar_1)
        (objectType Book_bar_1 BookType)
        (inReceptacle Book_bar_1 Bed_bar_1)
        (objectAtLocation Book_bar_1 loc_bar_1)
        (pickupable Book_bar_1)
        (objectType AlarmClock_bar_1 AlarmClockType)
        (inReceptacle AlarmClock_bar_1 SideTable_bar_1)
        (objectAtLocation AlarmClock_bar_1 loc_bar_13)
        (pickupable AlarmClock_bar_1)
        (objectType Mug_bar_1 MugType)
        (inReceptacle Mug_bar_1 Shelf_bar_2)
        (objectAtLocation Mug_bar_1 loc_bar_11)
        (pickupable Mug_bar_1)
        (heatable Mug_bar_1)
        (coolable Mug_bar_1)
        (cleanable Mug_bar_1)
        (isReceptacleObject Mug_bar_1)
        (objectType CellPhone_bar_1 CellPhoneType)
        (inReceptacle CellPhone_bar_1 Drawer_bar_1)
        (objectAtLocation CellPhone_bar_1 loc_bar_7)
        (pickupable CellPhone_bar_1)
        (objectType Vase_bar_1 VaseType)
        (inReceptacle Vase_bar_1 Shelf_bar_3)
        (objectAtLocation Vase_bar_1 loc_bar_10)
        (pickupable Vase_bar_1)
        (canContain BedType BookType)
        (canContain BedType CellPhoneType)
        (canContain DeskType AlarmClockType)
        (canContain DeskType BookType)
        (canContain DeskType CDType)
        (canContain DeskType CellPhoneType)
        (canContain DeskType CreditCardType)
        (canContain DeskType MugType)
        (canContain DeskType PenType)
        (canContain DeskType PencilType)
        (canContain DeskType VaseType)
        (canContain DrawerType BookType)
        (canContain DrawerType CDType)
        (canContain DrawerType CellPhoneType)
        (canContain DrawerType CreditCardType)
        (canContain DrawerType PenType)
        (canContain DrawerType PencilType)
        (canContain GarbageCanType CDType)
        (canContain GarbageCanType PenType)
        (canContain GarbageCanType PencilType)
        (canContain SafeType CDType)
        (canContain SafeType CellPhoneType)
        (canContain SafeType CreditCardType)
        (canContain SafeType VaseType)
        (canContain ShelfType AlarmClockType)
        (canContain ShelfType BookType)
        (canContain ShelfType CDType)
        (canContain ShelfType CellPhoneType)
        (canContain ShelfType CreditCardType)
        (canContain ShelfType MugType)
        (canContain ShelfType PenType)
        (canContain ShelfType PencilType)
        (canContain ShelfType VaseType)
        (canContain SideTableType AlarmClockType)
        (canContain SideTableType BookType)
        (canContain SideTableType CDType)
        (canContain SideTableType CellPhoneType)
        (canContain SideTableType CreditCardType)
        (canContain SideTableType MugType)
        (canContain SideTableType PenType)
        (canContain SideTableType PencilType)
        (canContain SideTableType VaseType)
    )
    (:goal
        (and
            (exists (?r - receptacle ?o1 - object ?o2 - object)
                (and
                    (not (= ?o1 ?o2))
                    (objectType ?o1 CDType)
                    (objectType ?o2 CDType)
                    (receptacleType ?r ShelfType)
                    (inReceptacle ?o1 ?r)
                    (inReceptacle ?o2 ?r)
                )
            )
        )
    )
)
